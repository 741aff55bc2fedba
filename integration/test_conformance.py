"""
One conformance suite for kopf-core's client protocol, run against two implementations:
kopf-client on the real API server, and kopf-testing's in-memory API.

Every test runs once per implementation with the same inputs (objects created,
patched, deleted, listed and watched through the protocol only) and the same
assertions on the outputs (the bodies returned, the errors raised, the events
streamed), so that the in-memory API's fidelity to the real one is a tested fact.
Cluster-scoped test objects are named after the test's namespace, to be unique.
The tests' own client (``kube``: kubectl vs. the in-memory API) is compared the
same way at the end, for what the protocol does not have (field selectors).
"""
import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from integration.conformance_env import CRDS, GROUP, ApiEnv, find, kopf_client_env, memory_env
from integration.controlplane import Cluster, KubectlError
from kopf import clients
from kopf_testing import Kube, KubeClient, apply_crds
from kopf_testing.memory import MemoryApi, MemoryKube

MERGE, JSON = clients.PatchType.MERGE, clients.PatchType.JSON


@pytest.fixture(params=['kopf-client', 'memory'])
async def env(request: pytest.FixtureRequest) -> AsyncIterator[ApiEnv]:
    if request.param == 'memory':
        envs = memory_env()
    else:
        envs = kopf_client_env(request.getfixturevalue('cluster'))
    async for value in envs:
        yield value


async def create(env: ApiEnv, name: str, **fields: Any) -> dict[str, Any]:
    return await env.client.create_object(env.widgets, namespace=env.namespace, body=env.widget(name, **fields))


async def patch(env: ApiEnv, name: str, body: Any, **kwargs: Any) -> dict[str, Any]:
    return await env.client.patch_object(env.widgets, namespace=env.namespace, name=name, patch=body, **kwargs)


def rv(obj: dict[str, Any]) -> int:
    return int(obj['metadata']['resourceVersion'])


# --- Discovery ---

async def test_discovery_reports_scopes_kinds_and_subresources(env: ApiEnv) -> None:
    assert (env.widgets.kind, env.widgets.namespaced) == ('Conformer', True)
    assert env.widgets.subresources == {'status'}
    assert 'cfm' in env.widgets.shortcuts
    assert (env.plain.namespaced, env.plain.subresources) == (True, frozenset())
    assert (env.cluster_widgets.kind, env.cluster_widgets.namespaced) == ('ClusterConformer', False)
    core = {resource.plural: resource for resource in await env.client.scan_resources(groups={''})}
    assert core['namespaces'].namespaced is False
    assert core['events'].namespaced is True
    assert {'create', 'list', 'watch', 'patch', 'delete'} <= env.widgets.verbs


# --- Creation, reading, resourceVersion, conflicts ---

async def test_creation_sets_the_servers_metadata_and_drops_the_status(env: ApiEnv) -> None:
    obj = await create(env, 'w', spec={'size': 1}, status={'ready': True})
    meta = obj['metadata']
    assert (meta['name'], meta['namespace'], meta['generation']) == ('w', env.namespace, 1)
    assert meta['uid'] and meta['creationTimestamp'].endswith('Z') and rv(obj) > 0
    assert 'status' not in obj  # a status subresource is written via the subresource only
    assert obj['spec'] == {'size': 1}
    assert await env.client.get_object(env.widgets, namespace=env.namespace, name='w') == obj


async def test_creation_with_a_generated_name(env: ApiEnv) -> None:
    body = env.widget('')
    body['metadata'] = {'generateName': 'gen-'}
    obj = await env.client.create_object(env.widgets, namespace=env.namespace, body=body)
    assert obj['metadata']['name'].startswith('gen-') and len(obj['metadata']['name']) == len('gen-') + 5


async def test_creating_an_existing_object_is_a_conflict(env: ApiEnv) -> None:
    await create(env, 'w')
    with pytest.raises(clients.APIConflictError) as info:
        await create(env, 'w')
    assert info.value.reason == 'AlreadyExists'


async def test_a_namespace_mismatch_in_the_body_is_refused(env: ApiEnv) -> None:
    body = env.widget('w')
    body['metadata']['namespace'] = 'elsewhere'
    with pytest.raises(clients.APIClientError) as info:
        await env.client.create_object(env.widgets, namespace=env.namespace, body=body)
    assert info.value.status == 400


async def test_creating_in_an_absent_namespace_is_not_found(env: ApiEnv) -> None:
    with pytest.raises(clients.APINotFoundError):
        await env.client.create_object(env.widgets, namespace=f'{env.namespace}-absent', body=env.widget('w'))


async def test_reading_an_absent_object_is_not_found(env: ApiEnv) -> None:
    with pytest.raises(clients.APINotFoundError) as info:
        await env.client.get_object(env.widgets, namespace=env.namespace, name='absent')
    assert info.value.reason == 'NotFound'


async def test_each_change_gets_a_higher_resource_version_and_a_no_op_gets_none(env: ApiEnv) -> None:
    created = await create(env, 'w', spec={'size': 1})
    changed = await patch(env, 'w', {'spec': {'size': 2}})
    unchanged = await patch(env, 'w', {'spec': {'size': 2}})
    other = await create(env, 'other')
    assert rv(created) < rv(changed) == rv(unchanged) < rv(other)


async def test_a_stale_resource_version_in_a_patch_is_a_conflict(env: ApiEnv) -> None:
    created = await create(env, 'w', spec={'size': 1})
    await patch(env, 'w', {'spec': {'size': 2}})
    with pytest.raises(clients.APIConflictError):
        await patch(env, 'w', {'metadata': {'resourceVersion': created['metadata']['resourceVersion']},
                               'spec': {'size': 3}})
    current = await env.client.get_object(env.widgets, namespace=env.namespace, name='w')
    assert current['spec'] == {'size': 2}
    updated = await patch(env, 'w', {'metadata': {'resourceVersion': current['metadata']['resourceVersion']},
                                     'spec': {'size': 3}})
    assert updated['spec'] == {'size': 3}


# --- Patches ---

async def test_merge_patch_merges_objects_replaces_lists_and_removes_nulls(env: ApiEnv) -> None:
    await create(env, 'w', spec={'a': {'x': 1, 'y': 2}, 'list': [1, 2], 'gone': 'soon'})
    obj = await patch(env, 'w', {'spec': {'a': {'y': None, 'z': 3}, 'list': [3], 'gone': None}})
    assert obj['spec'] == {'a': {'x': 1, 'z': 3}, 'list': [3]}


async def test_json_patch_applies_after_a_passing_test(env: ApiEnv) -> None:
    await create(env, 'w', spec={'size': 1, 'items': ['a']})
    obj = await patch(env, 'w', [{'op': 'test', 'path': '/spec/size', 'value': 1},
                                 {'op': 'replace', 'path': '/spec/size', 'value': 2},
                                 {'op': 'add', 'path': '/spec/items/-', 'value': 'b'}], patch_type=JSON)
    assert obj['spec'] == {'size': 2, 'items': ['a', 'b']}


async def test_json_patch_with_a_failing_test_changes_nothing(env: ApiEnv) -> None:
    created = await create(env, 'w', spec={'size': 1})
    with pytest.raises(clients.APIUnprocessableEntityError):
        await patch(env, 'w', [{'op': 'test', 'path': '/spec/size', 'value': 99},
                               {'op': 'replace', 'path': '/spec/size', 'value': 2}], patch_type=JSON)
    assert await env.client.get_object(env.widgets, namespace=env.namespace, name='w') == created


async def test_json_patch_removing_an_absent_path_is_unprocessable(env: ApiEnv) -> None:
    await create(env, 'w', spec={})
    with pytest.raises(clients.APIUnprocessableEntityError):
        await patch(env, 'w', [{'op': 'remove', 'path': '/spec/absent'}], patch_type=JSON)


async def test_patching_an_absent_object_is_not_found(env: ApiEnv) -> None:
    with pytest.raises(clients.APINotFoundError):
        await patch(env, 'absent', {'spec': {'x': 1}})


# --- Status subresource and generation ---

async def test_the_main_resource_ignores_status_and_the_status_subresource_ignores_the_rest(env: ApiEnv) -> None:
    await create(env, 'w', spec={'size': 1})
    obj = await patch(env, 'w', {'spec': {'size': 2}, 'status': {'ignored': True}})
    assert 'status' not in obj and obj['spec'] == {'size': 2}
    obj = await patch(env, 'w', {'spec': {'size': 3}, 'metadata': {'labels': {'x': 'y'}}, 'status': {'ok': 1}},
                      subresource='status')
    assert obj['status'] == {'ok': 1} and obj['spec'] == {'size': 2} and 'labels' not in obj['metadata']


async def test_generation_counts_spec_changes_only_with_a_status_subresource(env: ApiEnv) -> None:
    await create(env, 'w', spec={'size': 1})
    assert (await patch(env, 'w', {'metadata': {'labels': {'a': 'b'}}}))['metadata']['generation'] == 1
    assert (await patch(env, 'w', {'status': {'x': 1}}, subresource='status'))['metadata']['generation'] == 1
    assert (await patch(env, 'w', {'spec': {'size': 2}}))['metadata']['generation'] == 2


async def test_without_a_status_subresource_the_status_is_ordinary_and_counted(env: ApiEnv) -> None:
    obj = await env.client.create_object(env.plain, namespace=env.namespace,
                                         body=env.widget('p', kind='PlainConformer', status={'s': 1}))
    assert obj['status'] == {'s': 1}
    obj = await env.client.patch_object(env.plain, namespace=env.namespace, name='p', patch={'status': {'s': 2}})
    assert obj['status'] == {'s': 2} and obj['metadata']['generation'] == 2
    with pytest.raises(clients.APINotFoundError):
        await env.client.patch_object(env.plain, namespace=env.namespace, name='p', patch={'status': {'s': 3}},
                                      subresource='status')


async def test_fields_outside_the_schema_are_pruned(env: ApiEnv) -> None:
    obj = await env.client.create_object(env.widgets, namespace=env.namespace,
                                         body={**env.widget('w', spec={'kept': 1}), 'unknown': 'dropped'})
    assert 'unknown' not in obj and obj['spec'] == {'kept': 1}


# --- Deletion and finalizers ---

async def test_deletion_without_finalizers_is_immediate_and_repeatable(env: ApiEnv) -> None:
    await create(env, 'w')
    await env.client.delete_object(env.widgets, namespace=env.namespace, name='w')
    with pytest.raises(clients.APINotFoundError):
        await env.client.get_object(env.widgets, namespace=env.namespace, name='w')
    await env.client.delete_object(env.widgets, namespace=env.namespace, name='w')  # absent: not an error


async def test_finalizers_hold_a_deleted_object_until_they_are_removed(env: ApiEnv) -> None:
    await create(env, 'w', metadata={'name': 'w', 'finalizers': ['example.com/hold']})
    await env.client.delete_object(env.widgets, namespace=env.namespace, name='w')
    held = await env.client.get_object(env.widgets, namespace=env.namespace, name='w')
    assert held['metadata']['deletionTimestamp'].endswith('Z')
    assert held['metadata']['deletionGracePeriodSeconds'] == 0
    assert held['metadata']['generation'] == 2
    await env.client.delete_object(env.widgets, namespace=env.namespace, name='w')  # again: no change
    assert await env.client.get_object(env.widgets, namespace=env.namespace, name='w') == held
    with pytest.raises(clients.APIUnprocessableEntityError):
        await patch(env, 'w', {'metadata': {'finalizers': ['example.com/hold', 'example.com/new']}})
    await patch(env, 'w', {'metadata': {'finalizers': None}})
    with pytest.raises(clients.APINotFoundError):
        await env.client.get_object(env.widgets, namespace=env.namespace, name='w')


# --- Listing: selectors, pagination, namespaces ---

async def test_label_selectors_of_all_kinds(env: ApiEnv) -> None:
    for name, labels in [('a', {'tier': 'web', 'env': 'prod'}), ('b', {'tier': 'db', 'env': 'prod'}),
                         ('c', {'tier': 'web'}), ('d', {})]:
        await create(env, name, metadata={'name': name, 'labels': labels})
    cases = {'tier=web': 'ac', 'tier==web': 'ac', 'tier!=web': 'bd', 'tier in (db,cache)': 'b',
             'tier notin (web)': 'bd', 'env': 'ab', '!env': 'cd', 'tier=web,env=prod': 'a', 'tier=none': ''}
    for selector, expected in cases.items():
        page = await env.client.list_objects(env.widgets, namespace=env.namespace, label_selector=selector)
        assert ''.join(sorted(item['metadata']['name'] for item in page.items)) == expected, selector


async def test_pagination_is_a_consistent_snapshot(env: ApiEnv) -> None:
    for index in range(5):
        await create(env, f'w{index}')
    first = await env.client.list_objects(env.widgets, namespace=env.namespace, limit=2)
    await create(env, 'w9')  # after the first page: not in the snapshot
    await env.client.delete_object(env.widgets, namespace=env.namespace, name='w4')  # still in the snapshot
    assert first.continue_token is not None
    second = await env.client.list_objects(env.widgets, namespace=env.namespace, limit=2,
                                           continue_token=first.continue_token)
    assert second.continue_token is not None
    third = await env.client.list_objects(env.widgets, namespace=env.namespace, limit=2,
                                          continue_token=second.continue_token)
    assert third.continue_token is None
    names = [item['metadata']['name'] for page in (first, second, third) for item in page.items]
    assert names == ['w0', 'w1', 'w2', 'w3', 'w4']
    assert first.resource_version == second.resource_version == third.resource_version
    assert all(item['kind'] == 'Conformer' and item['apiVersion'] for item in first.items)


async def test_a_malformed_continue_token_is_a_bad_request(env: ApiEnv) -> None:
    with pytest.raises(clients.APIClientError) as info:
        await env.client.list_objects(env.widgets, namespace=env.namespace, limit=1, continue_token='garbage')
    assert info.value.status == 400


async def test_namespaces_separate_objects_and_cluster_wide_lists_join_them(env: ApiEnv) -> None:
    other = await env.new_namespace()
    await create(env, 'here')
    await env.client.create_object(env.widgets, namespace=other, body=env.widget('there'))
    here = await env.client.list_objects(env.widgets, namespace=env.namespace)
    everywhere = await env.client.list_objects(env.widgets, namespace=None)
    assert [item['metadata']['name'] for item in here.items] == ['here']
    assert find(everywhere.items, 'here') is not None and find(everywhere.items, 'there') is not None
    assert find(everywhere.items, 'there')['metadata']['namespace'] == other  # type: ignore[index]


async def test_cluster_scoped_objects_have_no_namespace(env: ApiEnv) -> None:
    name = f'cw-{env.namespace}'
    body = env.widget(name, kind='ClusterConformer', spec={'x': 1})
    obj = await env.client.create_object(env.cluster_widgets, namespace=None, body=body)
    assert 'namespace' not in obj['metadata'] and obj['spec'] == {'x': 1}
    page = await env.client.list_objects(env.cluster_widgets, namespace=None)
    assert find(page.items, name) is not None
    obj = await env.client.patch_object(env.cluster_widgets, namespace=None, name=name, patch={'spec': {'x': 2}})
    assert obj['spec'] == {'x': 2}


# --- Watching ---

async def collect(env: ApiEnv, resource_version: str, *, count: int, timeout: float = 10,
                  **kwargs: Any) -> list[dict[str, Any]]:
    """Events of one watch, until ``count`` non-bookmark events have come (or the stream ends)."""
    events: list[dict[str, Any]] = []
    stream = env.client.watch_objects(env.widgets, namespace=env.namespace, resource_version=resource_version,
                                      timeout_seconds=timeout, **kwargs)
    async for event in stream:
        events.append(dict(event))
        if len([e for e in events if e['type'] != 'BOOKMARK']) >= count:
            break
    return events


async def test_watching_from_a_list_streams_the_changes_in_order(env: ApiEnv) -> None:
    await create(env, 'before')
    listing = await env.client.list_objects(env.widgets, namespace=env.namespace)
    await create(env, 'w', spec={'size': 1})
    await patch(env, 'w', {'spec': {'size': 2}})
    await patch(env, 'w', {'spec': {'size': 2}})  # a no-op: no event
    await env.client.delete_object(env.widgets, namespace=env.namespace, name='w')
    events = await collect(env, listing.resource_version, count=3, allow_bookmarks=False)
    assert [(e['type'], e['object']['metadata']['name']) for e in events] == [
        ('ADDED', 'w'), ('MODIFIED', 'w'), ('DELETED', 'w')]
    assert events[1]['object']['spec'] == {'size': 2}
    versions = [rv(e['object']) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == 3


async def test_watching_without_a_version_starts_with_the_current_objects(env: ApiEnv) -> None:
    await create(env, 'a')
    await create(env, 'b')
    events = await collect(env, None, count=2, allow_bookmarks=False)  # type: ignore[arg-type]
    assert sorted((e['type'], e['object']['metadata']['name']) for e in events) == [('ADDED', 'a'), ('ADDED', 'b')]


async def test_watches_send_bookmarks_before_their_timeout_and_end(env: ApiEnv) -> None:
    """
    Bookmarks are best-effort in Kubernetes: the API server sends them ~2s before a
    watch's deadline once the resource's watch cache serves it (a new CRD's cache
    takes a while to be ready). So: a few quiet watches in a row; each ends by
    itself with nothing but bookmarks, and at least one has a bookmark.
    """
    created = await create(env, 'w')
    bookmarks: list[dict[str, Any]] = []
    for _ in range(15):
        events = await collect(env, created['metadata']['resourceVersion'], count=1, timeout=6)
        assert {e['type'] for e in events} <= {'BOOKMARK'}  # the stream has ended: nothing else came
        bookmarks.extend(events)
        if bookmarks:
            break
    assert bookmarks, 'no bookmark in 15 watches'
    assert rv(bookmarks[0]['object']) >= rv(created)
    assert bookmarks[0]['object']['kind'] == 'Conformer'


async def test_a_watch_from_an_expired_version_is_gone(env: ApiEnv) -> None:
    with pytest.raises(clients.APIGoneError):
        await collect(env, '1', count=1, timeout=5)


async def test_a_namespaced_watch_sees_only_its_namespace(env: ApiEnv) -> None:
    other = await env.new_namespace()
    listing = await env.client.list_objects(env.widgets, namespace=env.namespace)
    await env.client.create_object(env.widgets, namespace=other, body=env.widget('there'))
    await create(env, 'here')
    events = await collect(env, listing.resource_version, count=1, allow_bookmarks=False)
    assert [(e['type'], e['object']['metadata']['name']) for e in events] == [('ADDED', 'here')]


async def test_watches_see_changes_made_while_they_wait(env: ApiEnv) -> None:
    listing = await env.client.list_objects(env.widgets, namespace=env.namespace)
    task = asyncio.create_task(collect(env, listing.resource_version, count=2, allow_bookmarks=False))
    await asyncio.sleep(0.5)
    await create(env, 'w')
    await patch(env, 'w', {'spec': {'late': True}})
    events = await asyncio.wait_for(task, 15)
    assert [e['type'] for e in events] == ['ADDED', 'MODIFIED']


# --- Selectors, chunks, streaming lists, shards (settings.watching) ---

async def labelled(env: ApiEnv) -> None:
    for name, labels in [('a', {'tier': 'web'}), ('b', {'tier': 'db'}), ('c', {'tier': 'web'}), ('d', {})]:
        await create(env, name, metadata={'name': name, 'labels': labels})


async def test_field_selectors_by_name_and_namespace_in_lists(env: ApiEnv) -> None:
    await labelled(env)
    cases = {'metadata.name=b': 'b', 'metadata.name!=b': 'acd', f'metadata.namespace={env.namespace}': 'abcd',
             'metadata.namespace=elsewhere': '', 'metadata.name!=a,metadata.name!=d': 'bc'}
    for selector, expected in cases.items():
        page = await env.client.list_objects(env.widgets, namespace=env.namespace, field_selector=selector)
        assert ''.join(sorted(item['metadata']['name'] for item in page.items)) == expected, selector


async def test_label_and_field_selectors_together_are_an_and(env: ApiEnv) -> None:
    await labelled(env)
    page = await env.client.list_objects(env.widgets, namespace=env.namespace, label_selector='tier=web',
                                         field_selector='metadata.name!=a')
    assert [item['metadata']['name'] for item in page.items] == ['c']


async def test_chunks_of_a_selected_list_hold_only_the_selected_objects(env: ApiEnv) -> None:
    await labelled(env)
    first = await env.client.list_objects(env.widgets, namespace=env.namespace, limit=1, label_selector='tier=web')
    assert first.continue_token is not None
    second = await env.client.list_objects(env.widgets, namespace=env.namespace, limit=1, label_selector='tier=web',
                                           continue_token=first.continue_token)
    third = await env.client.list_objects(env.widgets, namespace=env.namespace, limit=1, label_selector='tier=web',
                                          continue_token=second.continue_token)
    # The server stops reading at the limit: 'd' follows 'c', so it cannot know that no more are selected.
    assert [item['metadata']['name'] for page in (first, second, third) for item in page.items] == ['a', 'c']
    assert second.continue_token is not None and third.continue_token is None


async def test_a_zero_limit_lists_everything_at_once(env: ApiEnv) -> None:
    await labelled(env)
    page = await env.client.list_objects(env.widgets, namespace=env.namespace, limit=0)
    assert len(page.items) == 4 and page.continue_token is None


async def test_a_selected_watch_sees_objects_entering_and_leaving_the_selection(env: ApiEnv) -> None:
    await labelled(env)
    listing = await env.client.list_objects(env.widgets, namespace=env.namespace)
    await patch(env, 'd', {'metadata': {'labels': {'tier': 'web'}}})  # enters
    await patch(env, 'b', {'spec': {'x': 1}})  # never in: not seen
    await patch(env, 'a', {'metadata': {'labels': {'tier': 'db'}}})  # leaves
    events = await collect(env, listing.resource_version, count=2, allow_bookmarks=False, label_selector='tier=web')
    assert [(e['type'], e['object']['metadata']['name']) for e in events] == [('ADDED', 'd'), ('DELETED', 'a')]
    assert events[1]['object']['metadata']['labels'] == {'tier': 'web'}  # as it was while selected


async def test_a_field_selected_watch_sees_only_the_selected_objects(env: ApiEnv) -> None:
    listing = await env.client.list_objects(env.widgets, namespace=env.namespace)
    await create(env, 'x')
    await create(env, 'y')
    events = await collect(env, listing.resource_version, count=1, allow_bookmarks=False,
                           field_selector='metadata.name=y')
    assert [(e['type'], e['object']['metadata']['name']) for e in events] == [('ADDED', 'y')]


async def test_a_streaming_list_sends_the_objects_then_the_end_bookmark_then_the_changes(env: ApiEnv) -> None:
    """Kubernetes 1.34+ streams lists by default (the WatchList feature gate); the pinned version does."""
    await labelled(env)
    stream = env.client.watch_objects(env.widgets, namespace=env.namespace, send_initial_events=True,
                                      label_selector='tier=web', timeout_seconds=10)
    events: list[dict[str, Any]] = []
    async for event in stream:
        events.append(dict(event))
        if event['type'] == 'BOOKMARK':
            await patch(env, 'c', {'spec': {'x': 1}})
        if event['type'] == 'MODIFIED':
            break
    assert [(e['type'], e['object']['metadata'].get('name')) for e in events] == [
        ('ADDED', 'a'), ('ADDED', 'c'), ('BOOKMARK', None), ('MODIFIED', 'c')]
    assert events[2]['object']['metadata']['annotations'] == {'k8s.io/initial-events-end': 'true'}
    assert rv(events[2]['object']) >= max(rv(events[0]['object']), rv(events[1]['object']))


async def test_shard_selectors_are_ignored_without_the_sharded_list_and_watch_gate(env: ApiEnv) -> None:
    """Sharded lists and watches need Kubernetes 1.36+ with the ShardedListAndWatch gate (alpha, off by default)."""
    await labelled(env)
    selector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')"
    page = await env.client.list_objects(env.widgets, namespace=env.namespace, shard_selector=selector)
    assert len(page.items) == 4 and page.shard_selector is None
    events = await collect(env, None, count=4, allow_bookmarks=False, shard_selector=selector)  # type: ignore[arg-type]
    assert len(events) == 4


# --- The tests' side (KubeClient): kubectl on the real server vs. the in-memory API ---

@pytest.fixture(params=['kubectl', 'memory'])
def kube(request: pytest.FixtureRequest) -> KubeClient:
    if request.param == 'memory':
        api = MemoryApi()
        kube: KubeClient = MemoryKube(api)
        kube.apply_crd(*CRDS)
        namespace = f'conf-{secrets.token_hex(4)}'
        kube.create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': namespace}})
        return MemoryKube(api, namespace)
    cluster: Cluster = request.getfixturevalue('cluster')
    apply_crds(cluster, *CRDS)
    return Kube(cluster, request.getfixturevalue('namespace'))


def test_field_selectors_by_name_and_namespace(kube: KubeClient) -> None:
    for name in ['a', 'b', 'c']:
        kube.create({'apiVersion': f'{GROUP}/v1', 'kind': 'Conformer', 'metadata': {'name': name}})
    def names(selector: str) -> list[str]:
        return [obj['metadata']['name'] for obj in kube.list('conformers', field_selector=selector)]
    assert names('metadata.name=b') == ['b']
    assert names('metadata.name!=b') == ['a', 'c']
    assert names(f'metadata.namespace={kube.namespace}') == ['a', 'b', 'c']
    assert names('metadata.namespace=elsewhere,metadata.name=a') == []


def test_the_tests_client_validates_creations_strictly_as_kubectl_does(kube: KubeClient) -> None:
    body = {'apiVersion': f'{GROUP}/v1', 'kind': 'Conformer', 'metadata': {'name': 'w'}, 'unknown': 'field'}
    with pytest.raises(KubectlError, match=r'strict decoding error: unknown field "unknown"'):
        kube.create(body)
    kube.create({key: value for key, value in body.items() if key != 'unknown'})
    assert 'other' not in kube.patch('conformers', 'w', {'other': 1})  # patches are not validated, but pruned
    with pytest.raises(KubectlError, match=r'\(NotFound\)'):
        kube.patch('conformers', 'absent', {'spec': {'x': 1}})


def test_the_tests_client_sees_the_same_object_as_stored(kube: KubeClient) -> None:
    kube.create({'apiVersion': f'{GROUP}/v1', 'kind': 'Conformer', 'metadata': {'name': 'w'}, 'spec': {'size': 1}})
    patched = kube.patch(f'conformers.{GROUP}', 'w', {'status': {'ok': True}}, subresource='status')
    assert patched['status'] == {'ok': True}
    assert kube.wait_for('cfm', 'w', lambda obj: obj['status']['ok'])['metadata']['generation'] == 1
    kube.delete('Conformer', 'w', wait=True)
    assert kube.find('conformers', 'w') is None
    with pytest.raises(KubectlError, match=r'\(NotFound\)'):
        kube.get('conformers', 'w')
