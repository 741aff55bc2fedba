"""
The in-memory API's selectors, streaming lists and shards, in what the real API server's conformance cannot show.

The conformance suite compares them with the real API server of the pinned
Kubernetes version (streaming lists on, sharded watches off); here are the
switches for other versions, and the operator's side split by shards on both.
"""
import asyncio
from typing import Any, Optional

import pytest

from kopf import clients
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import shards
from kopf._core.reactor import watching
from kopf_testing import crd_manifest
from kopf_testing.memory import MemoryApi, MemoryClient, MemoryKube

LOWER = shards.format_range('object.metadata.uid', 0, 1 << 63)
UPPER = shards.format_range('object.metadata.uid', 1 << 63, 1 << 64)


def make_api(**kwargs: Any) -> tuple[MemoryApi, clients.Resource]:
    api = MemoryApi(**kwargs)
    MemoryKube(api).apply_crd(crd_manifest('selecting.kopf.dev', 'widgets', 'Widget'))
    return api, api.served_by_name('widgets').resource


def widget(name: str, labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    return {'apiVersion': 'selecting.kopf.dev/v1', 'kind': 'Widget', 'metadata': {'name': name, 'labels': labels or {}}}


async def take(stream: Any, count: int) -> list[clients.RawEvent]:
    events: list[clients.RawEvent] = []
    async for event in stream:
        events.append(event)
        if len(events) >= count:
            break
    return events


async def test_a_watch_sees_objects_entering_and_leaving_its_label_selector() -> None:
    api, widgets = make_api()
    api.create(widgets, 'default', widget('w'))
    rv = api.list(widgets, 'default')[1]
    api.patch(widgets, 'default', 'w', {'metadata': {'labels': {'tier': 'web'}}}, clients.PatchType.MERGE)
    api.patch(widgets, 'default', 'w', {'metadata': {'labels': {'tier': 'web', 'x': 'y'}}}, clients.PatchType.MERGE)
    api.patch(widgets, 'default', 'w', {'metadata': {'labels': {'tier': None}}}, clients.PatchType.MERGE)
    stream = MemoryClient(api).watch_objects(widgets, namespace='default', resource_version=rv,
                                             allow_bookmarks=False, label_selector='tier=web')
    events = await take(stream, 3)
    assert [event['type'] for event in events] == ['ADDED', 'MODIFIED', 'DELETED']
    # The object that left the selector is reported as it was, at the version of its change.
    assert events[2]['object']['metadata']['labels'] == {'tier': 'web', 'x': 'y'}
    versions = [int(event['object']['metadata']['resourceVersion']) for event in events]
    assert versions[2] > versions[1]


async def test_a_streaming_list_sends_the_objects_and_the_end_bookmark() -> None:
    api, widgets = make_api()
    api.create(widgets, 'default', widget('a'))
    api.create(widgets, 'default', widget('b'))
    stream = MemoryClient(api).watch_objects(widgets, namespace='default', send_initial_events=True)
    events = await take(stream, 3)
    assert [(event['type'], event['object']['metadata'].get('name')) for event in events] == [
        ('ADDED', 'a'), ('ADDED', 'b'), ('BOOKMARK', None)]
    assert events[2]['object']['metadata']['annotations'] == {'k8s.io/initial-events-end': 'true'}


async def test_without_streaming_lists_the_request_is_refused_as_by_a_server_without_watchlist() -> None:
    api, widgets = make_api(streaming_lists=False)
    with pytest.raises(clients.APIUnprocessableEntityError, match='WatchList feature gate'):
        await take(MemoryClient(api).watch_objects(widgets, namespace='default', send_initial_events=True), 1)


async def test_shard_selectors_are_ignored_without_sharded_watches() -> None:
    api, widgets = make_api()
    for index in range(6):
        api.create(widgets, 'default', widget(f'w{index}'))
    page = await MemoryClient(api).list_objects(widgets, namespace='default', shard_selector=LOWER)
    assert len(page.items) == 6 and page.shard_selector is None


async def test_shard_selectors_split_the_objects_with_sharded_watches() -> None:
    api, widgets = make_api(sharded_watches=True)
    for index in range(20):
        api.create(widgets, 'default', widget(f'w{index}'))
    client = MemoryClient(api)
    lower = await client.list_objects(widgets, namespace='default', shard_selector=LOWER)
    upper = await client.list_objects(widgets, namespace='default', shard_selector=UPPER)
    assert (lower.shard_selector, upper.shard_selector) == (LOWER, UPPER)
    assert len(lower.items) + len(upper.items) == 20 and lower.items and upper.items
    assert all(shards.parse(LOWER).matches(item) for item in lower.items)


async def test_an_invalid_shard_selector_is_a_bad_request_with_sharded_watches() -> None:
    api, widgets = make_api(sharded_watches=True)
    with pytest.raises(clients.APIClientError, match='invalid shard selector') as info:
        await MemoryClient(api).list_objects(widgets, namespace='default', shard_selector='shardRange(x)')
    assert info.value.status == 400


NS_LOWER = shards.format_range('object.metadata.namespace', 0, 1 << 63)
NS_UPPER = shards.format_range('object.metadata.namespace', 1 << 63, 1 << 64)
# Different first letters: FNV-1a mixes the last bytes poorly into the high bits (uids are random anyway).
NAMESPACES = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel']  # 3 low, 5 high


def populate(api: MemoryApi, widgets: clients.Resource) -> None:
    """The same objects on any server: two in each namespace, the namespaces' names hashed alike everywhere."""
    namespaces = api.served_by_name('namespaces').resource
    for namespace in NAMESPACES:
        api.create(namespaces, None, {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': namespace}})
        for name in ('a', 'b'):
            api.create(widgets, namespace, widget(name))


async def handled_by(api: MemoryApi, widgets: clients.Resource, selector: str, *, streaming: bool) -> set[str]:
    """The objects an operator's cluster-wide stream reports at the start with this shard selector."""
    settings = OperatorSettings()
    settings.watching.shard_selectors['widgets'] = selector
    settings.watching.initial_streaming = streaming
    listed = asyncio.Event()
    seen: set[str] = set()

    async def consume() -> None:
        async for event in watching.continuous_watch(client=MemoryClient(api), settings=settings,
                                                     resource=widgets, namespace=None, on_listed=listed):
            meta = event['object']['metadata']
            seen.add(f"{meta['namespace']}/{meta['name']}")

    task = asyncio.create_task(consume())
    await asyncio.wait_for(listed.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return seen


@pytest.mark.parametrize('streaming', [False, True], ids=['listing', 'streaming'])
async def test_the_operators_split_is_the_same_whether_the_server_or_the_operator_filters(streaming: bool) -> None:
    ignoring, widgets = make_api()
    honouring, _ = make_api(sharded_watches=True)
    populate(ignoring, widgets)
    populate(honouring, widgets)
    by_operator = [await handled_by(ignoring, widgets, s, streaming=streaming) for s in (NS_LOWER, NS_UPPER)]
    by_server = [await handled_by(honouring, widgets, s, streaming=streaming) for s in (NS_LOWER, NS_UPPER)]
    assert by_operator == by_server
    assert by_operator[0] | by_operator[1] == {f'{ns}/{name}' for ns in NAMESPACES for name in 'ab'}
    assert not by_operator[0] & by_operator[1] and all(by_operator)
