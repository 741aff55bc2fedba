"""
What a stream knew, carried into its restart with another shard selector.

The listing of the restarted stream reports only the objects new to it and the
changes it missed; it never reports as deleted the objects moved to other
replicas, and re-reports the objects that were in flux (never taken as done).
"""
import asyncio
import uuid
from typing import Any, AsyncGenerator, Dict, List, Optional, Set, cast

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import references, shards
from kopf._core.engines.coordination import sharding
from kopf._core.reactor import orchestration, queueing, watching
from kopf._core.reactor.cycles import CycleResult

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)


def body(uid: str, version: str = '1') -> Dict[str, Any]:
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
            'metadata': {'uid': uid, 'name': f'n-{uid}', 'namespace': 'ns1', 'resourceVersion': version}}


class ListingClient:
    """Lists the objects given (filtered by the shard selector, as the API server does), then watches nothing."""

    def __init__(self, objects: List[Dict[str, Any]]) -> None:
        self.objects = objects

    async def list_objects(self, resource: references.Resource, *, shard_selector: Optional[str] = None,
                           **_: Any) -> protocols.ObjectPage:
        items = self.objects if shard_selector is None else [
            obj for obj in self.objects if shards.parse(shard_selector).matches(obj)]
        return protocols.ObjectPage(items=items, resource_version='100', shard_selector=shard_selector)

    async def watch_objects(self, resource: references.Resource, **_: Any) -> Any:
        await asyncio.Event().wait()
        yield {}  # never


async def listed(client: ListingClient, *, selector: Optional[str], known: watching.Knowledge) -> List[Any]:
    settings = configuration.OperatorSettings()
    settings.watching.initial_streaming = False
    events = cast(AsyncGenerator[Any, None], watching.continuous_watch(
        client=client, settings=settings, resource=RESOURCE, namespace='ns1',  # type: ignore[arg-type]
        shard_selector=selector, known=known))
    received: List[Any] = []
    try:
        while len(received) < len(client.objects):
            received.append(await asyncio.wait_for(events.__anext__(), timeout=0.5))
    except asyncio.TimeoutError:
        pass
    finally:
        await events.aclose()
    return received


async def test_a_restart_with_more_slots_reports_only_the_new_and_the_changed_objects() -> None:
    objects = [body(str(uuid.uuid4())) for _ in range(60)]
    ours = frozenset(range(0, sharding.SLOTS // 2))
    selector = sharding.selector(ours, field='uid')
    first = orchestration._Knowledge()
    before = await listed(ListingClient(objects), selector=selector, known=first.known)
    assert 0 < len(before) < len(objects) and all(event['type'] is None for event in before)

    changed = before[0]['object']['metadata']['uid']
    in_flux = before[1]['object']['metadata']['uid']
    first.unsettled.add(in_flux)
    objects = [body(obj['metadata']['uid'], '2' if obj['metadata']['uid'] == changed else '1') for obj in objects]
    carried = first.carried(None)  # all slots now: e.g. the other replica was killed
    after = await listed(ListingClient(objects), selector=None, known=carried.known)
    reported = {event['object']['metadata']['uid'] for event in after}
    newly = {obj['metadata']['uid'] for obj in objects} - {event['object']['metadata']['uid'] for event in before}
    assert reported == newly | {changed, in_flux}
    assert all(event['type'] is None for event in after)  # as in an initial listing: resumed, not created


async def test_a_restart_with_fewer_slots_reports_no_deletion_of_the_objects_moved_away() -> None:
    objects = [body(str(uuid.uuid4())) for _ in range(60)]
    first = orchestration._Knowledge()
    await listed(ListingClient(objects), selector=None, known=first.known)
    assert len(first.known) == len(objects)
    kept = sharding.selector(frozenset(range(0, sharding.SLOTS // 2)), field='uid')
    carried = first.carried(kept)
    assert 0 < len(carried.known) < len(objects)
    after = await listed(ListingClient(objects), selector=kept, known=carried.known)
    assert after == []  # nothing new, nothing changed; and the objects moved away are not "deleted"


async def test_the_objects_with_workers_at_the_stop_are_unsettled() -> None:
    release = asyncio.Event()

    async def events() -> Any:
        for index in range(3):
            yield typedefs.RawEvent(type='ADDED', object=body(f'uid{index}'))
        await asyncio.Event().wait()

    async def processor(raw_event: typedefs.RawEvent) -> CycleResult:
        if raw_event['object']['metadata']['uid'] == 'uid1':
            await release.wait()  # still in its cycle when the stream stops
        return CycleResult()

    settings = configuration.OperatorSettings()
    settings.queueing.exit_timeout = 0.1
    unsettled: Set[str] = set()
    task = asyncio.create_task(queueing.watcher(events=events(), processor=processor, settings=settings,
                                                unsettled=unsettled))
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.wait([task])
    assert unsettled == {'uid1'}
