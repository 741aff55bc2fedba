"""
A long initial listing gives the event loop a turn every few objects.

The client decodes a listing's items as they are taken; the turns let the
workers of the objects taken so far run before more are decoded, so that a
listing of all objects at once (``chunk_size=None``) is never in memory as a
whole, and other tasks (probes, other streams) are not starved meanwhile.
"""
import asyncio
from typing import Any, AsyncGenerator, AsyncIterator, List, cast

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.reactor import watching

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)
OBJECTS = 25


def listed_object(index: int) -> Any:
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
            'metadata': {'uid': f'uid{index}', 'name': f'obj{index}', 'namespace': 'ns1', 'resourceVersion': '5'}}


class ListingClient:
    """Lists many objects in one page without ever suspending; its watches stay open with no events."""

    async def list_objects(self, resource: references.Resource, **_: Any) -> protocols.ObjectPage:
        return protocols.ObjectPage(items=[listed_object(index) for index in range(OBJECTS)], resource_version='10')

    async def watch_objects(self, resource: references.Resource, **_: Any) -> AsyncIterator[Any]:
        await asyncio.Event().wait()
        yield {}


async def test_the_loop_gets_a_turn_every_few_listed_objects() -> None:
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    counter = asyncio.create_task(count_turns())
    await asyncio.sleep(0)  # let the counter start
    events = cast(AsyncGenerator[Any, None], watching.continuous_watch(
        client=ListingClient(), settings=configuration.OperatorSettings(),  # type: ignore[arg-type]
        resource=RESOURCE, namespace='ns1'))
    turns_seen: List[int] = []
    try:
        for _ in range(OBJECTS):
            await events.__anext__()
            turns_seen.append(turns)
    finally:
        await events.aclose()
        counter.cancel()
    # The objects taken with no turn in between: 10 at a time (watching.LISTING_ITEMS_PER_TURN).
    runs = [len([seen for seen in turns_seen if seen == value]) for value in sorted(set(turns_seen))]
    assert runs == [10, 10, 5]
