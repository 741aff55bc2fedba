"""
A watch-stream broken by the client's transport (no API error, no OSError): reconnected, never dead.

The API client is a fake whose first watch requests fail with an error of its
own (like a disconnect or a cut payload of an HTTP library after its retries),
then serves an open watch. The time is fake (looptime).
"""
import asyncio
import itertools
import logging
from typing import Any, AsyncGenerator, AsyncIterator, List, cast

import pytest

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.reactor import watching

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)
OBJECT = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
          'metadata': {'uid': 'uid1', 'name': 'obj1', 'namespace': 'ns1', 'resourceVersion': '11'}}


class ServerDisconnected(Exception):
    """Like a transport error of a client library: neither an API error nor an OSError."""


class BreakingClient:
    """Lists nothing; fails the first watches with the errors given, then streams one event and stays open."""

    def __init__(self, errors: List[Exception]) -> None:
        self.errors = errors
        self.watches: List[tuple[float, Any]] = []

    async def list_objects(self, resource: references.Resource, **_: Any) -> protocols.ObjectPage:
        return protocols.ObjectPage(items=[], resource_version='10')

    async def watch_objects(self, resource: references.Resource, *, resource_version: Any,
                            **_: Any) -> AsyncIterator[Any]:
        self.watches.append((asyncio.get_running_loop().time(), resource_version))
        if self.errors:
            raise self.errors.pop(0)
        yield {'type': 'ADDED', 'object': OBJECT}
        await asyncio.Event().wait()


async def first_event(client: BreakingClient) -> Any:
    settings = configuration.OperatorSettings()
    settings.watching.reconnect_backoff = 0.1
    events = cast(AsyncGenerator[Any, None], watching.continuous_watch(
        client=client, settings=settings,  # type: ignore[arg-type]
        resource=RESOURCE, namespace='ns1'))
    try:
        return await events.__anext__()
    finally:
        await events.aclose()


@pytest.mark.looptime
async def test_transport_errors_reconnect_with_backoff(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger='kopf.reactor.outages')
    client = BreakingClient([ServerDisconnected('Server disconnected')] * 4 + [ValueError('payload cut')])
    event = await first_event(client)
    assert event == {'type': 'ADDED', 'object': OBJECT}
    times = [when for when, _ in client.watches]
    assert [later - earlier for earlier, later in itertools.pairwise(times)] == [1, 2, 4, 8, 10]
    assert {version for _, version in client.watches} == {'10'}  # from the last known version, no re-listing
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 5
    assert errors[0] == ("Failed to stream kopfexamples.v1.kopf.dev in 'ns1'; retrying in 1s (attempt 1); "
                         "reconnecting from the last known version. "
                         "The error: ServerDisconnected('Server disconnected')")
    assert errors[4].startswith("Failed to stream kopfexamples.v1.kopf.dev in 'ns1'; retrying in 10s (attempt 5);")
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["Succeeded to stream kopfexamples.v1.kopf.dev in 'ns1' after 5 failure(s)."]


@pytest.mark.looptime
async def test_api_refusals_other_than_the_known_ones_escape() -> None:
    client = BreakingClient([apierrors.APIClientError({'message': 'bad request'}, status=400)])
    with pytest.raises(apierrors.APIClientError, match='bad request'):
        await first_event(client)
