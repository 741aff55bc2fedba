"""
A watch-stream of a resource that is gone (its CRD deleted): re-listed, slower and slower.

The stream is stopped by the observer once the CRD's deletion is seen; until
then, it must neither fail nor hammer the API. The time is fake (looptime).
"""
import asyncio
import itertools
from typing import Any, AsyncIterator, List

import pytest

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.reactor import watching

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)
OBJECT = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
          'metadata': {'uid': 'uid1', 'name': 'obj1', 'namespace': 'ns1', 'resourceVersion': '5'}}


class VanishedClient:
    """Answers 404 to the first ``absences`` listings, then lists one object."""

    def __init__(self, absences: int) -> None:
        self.absences = absences
        self.listed_at: List[float] = []

    async def list_objects(self, resource: references.Resource, **_: Any) -> protocols.ObjectPage:
        self.listed_at.append(asyncio.get_running_loop().time())
        if self.absences > 0:
            self.absences -= 1
            raise apierrors.APINotFoundError({'message': 'the server could not find the requested resource',
                                              'code': 404}, status=404)
        return protocols.ObjectPage(items=[OBJECT], resource_version='10')

    async def watch_objects(self, resource: references.Resource, **_: Any) -> AsyncIterator[Any]:
        await asyncio.sleep(1000)
        yield {}  # pragma: no cover


@pytest.mark.looptime
async def test_a_vanished_resource_is_relisted_with_growing_pauses() -> None:
    client = VanishedClient(absences=6)
    events = watching.continuous_watch(client=client, settings=configuration.OperatorSettings(),  # type: ignore[arg-type]
                                       resource=RESOURCE, namespace='ns1')
    try:
        event: Any = await events.__anext__()
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    assert event == {'type': None, 'object': OBJECT}
    pauses = [later - earlier for earlier, later in itertools.pairwise(client.listed_at)]
    assert pauses == [1, 2, 4, 8, 10, 10]
