"""
A watch-stream without the permission to list or watch: logged, retried, recovered.

The API client is a fake that refuses (403) the first requests of one verb and
then serves a listing of one object and an empty watch. The time is fake
(looptime): the delays between the attempts are exact loop seconds.
"""
import asyncio
import itertools
import logging
from typing import Any, AsyncGenerator, AsyncIterator, List, Optional, cast

import pytest

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.reactor import watching

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)
OBJECT = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
          'metadata': {'uid': 'uid1', 'name': 'obj1', 'namespace': 'ns1', 'resourceVersion': '5'}}
MESSAGE = 'kopfexamples.kopf.dev is forbidden: User "someone" cannot list resource "kopfexamples"'


class RefusingClient:
    """Refuses the first ``refusals`` requests of the verb with 403, then serves them."""

    def __init__(self, *, verb: str, refusals: int) -> None:
        self.verb = verb
        self.refusals = refusals
        self.requests: List[tuple[str, float]] = []

    def _check(self, verb: str) -> None:
        self.requests.append((verb, asyncio.get_running_loop().time()))
        if verb == self.verb and self.refusals > 0:
            self.refusals -= 1
            raise apierrors.APIForbiddenError({'message': MESSAGE, 'code': 403}, status=403)

    async def list_objects(self, resource: references.Resource, **_: Any) -> protocols.ObjectPage:
        self._check('list')
        return protocols.ObjectPage(items=[OBJECT], resource_version='10')

    async def watch_objects(self, resource: references.Resource, **_: Any) -> AsyncIterator[Any]:
        self._check('watch')
        await asyncio.sleep(1000)  # an open stream with no events
        yield {}  # pragma: no cover


def watch(client: RefusingClient, *, namespace: Optional[str], retry_forbidden: bool = True,
          ) -> AsyncGenerator[Any, None]:
    settings = configuration.OperatorSettings()
    return cast(AsyncGenerator[Any, None], watching.continuous_watch(
        client=client, settings=settings,  # type: ignore[arg-type]
        resource=RESOURCE, namespace=namespace, retry_forbidden=retry_forbidden))


async def first_event(client: RefusingClient, *, retry_forbidden: bool = True) -> Optional[Any]:
    events = watch(client, namespace='ns1', retry_forbidden=retry_forbidden)
    try:
        return await events.__anext__()
    finally:
        await events.aclose()


@pytest.mark.looptime
async def test_forbidden_listing_is_logged_and_retried_with_backoff(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger='kopf.reactor.permissions')
    client = RefusingClient(verb='list', refusals=6)
    event = await first_event(client)
    assert event == {'type': None, 'object': OBJECT}
    assert [verb for verb, _ in client.requests] == ['list'] * 7
    times = [when for _, when in client.requests]
    assert [later - earlier for earlier, later in itertools.pairwise(times)] == [1, 2, 4, 8, 10, 10]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 6
    assert errors[0] == (f"The operator is forbidden to list kopfexamples.kopf.dev in namespace 'ns1'; "
                         f"retrying in 1s (attempt 1) until the permission is granted. The API says: {MESSAGE}")
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["The operator is permitted to list kopfexamples.kopf.dev in namespace 'ns1' now; "
                     "serving it after 6 refusal(s)."]


@pytest.mark.looptime
async def test_forbidden_watching_is_logged_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    client = RefusingClient(verb='watch', refusals=2)
    events = watch(client, namespace=None)

    async def next_event() -> Any:
        return await events.__anext__()

    try:
        await next_event()  # the listing
        task = asyncio.create_task(next_event())
        await asyncio.sleep(100)
        task.cancel()
        await asyncio.wait([task])
    finally:
        await events.aclose()
    assert [verb for verb, _ in client.requests] == ['list', 'watch', 'watch', 'watch']
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert [error.split(';')[0] for error in errors] == [
        "The operator is forbidden to watch kopfexamples.kopf.dev cluster-wide"] * 2


async def test_forbidden_escalates_when_not_retried() -> None:
    client = RefusingClient(verb='list', refusals=1)
    with pytest.raises(apierrors.APIForbiddenError):
        await first_event(client, retry_forbidden=False)
