"""
Feature gates of the local control plane, shown on the real API server: sharded lists and watches
(KEP-5866, the ``ShardedListAndWatch`` gate, alpha and off by default) and streaming lists
(``WatchList``, on by default).

With the gate on, the API server keeps only the objects whose uid (or namespace) hashes into the
selector's ranges and echoes the selector in ``metadata.shardInfo`` (not for custom resources, in
1.37.2: they are filtered, but their lists carry no ``shardInfo``); the framework's own filter
(``kopf._cogs.structs.shards``, used when a server ignores the selector) must split the objects the
same way. With the gate off, the server ignores the selector: all objects, no ``shardInfo``.
"""
import json
import os
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from integration.controlplane import Cluster, FeatureGates
from integration.gates import GatedClusters, cluster_with_gates
from integration.kubeobjects import apply_crds
from integration.operating import EXAMPLES
from kopf._cogs.structs import shards

UID = 'object.metadata.uid'
NAMESPACE = 'object.metadata.namespace'
QUARTERS = [shards.format_range(UID, i << 62, (i + 1) << 62) for i in range(4)]
LOWER_HALF = shards.format_range(UID, 0, 1 << 63)
OBJECTS = 24  # enough that every quarter gets some (all in one quarter: 4 * 0.25**24, never)
INITIAL_EVENTS_END = 'k8s.io/initial-events-end'


@pytest.fixture(scope='module')
def sharded(kopf_gated_cluster: GatedClusters) -> Cluster:
    return cluster_with_gates(kopf_gated_cluster, {'ShardedListAndWatch': True})


@pytest.fixture(scope='module')
def unsharded(kopf_gated_cluster: GatedClusters) -> Cluster:
    return cluster_with_gates(kopf_gated_cluster, {'ShardedListAndWatch': False})


@pytest.fixture(scope='module')
def default(kopf_gated_cluster: GatedClusters, kopf_feature_gates: FeatureGates) -> Cluster:
    """The session's cluster, as long as it runs with the release's default for WatchList."""
    if 'WatchList' in kopf_feature_gates:
        pytest.skip('--kopf-feature-gates sets WatchList: this module checks its default.')
    return kopf_gated_cluster({})


def make_namespace(cluster: Cluster) -> Iterator[str]:
    name = f'test-gates-{os.urandom(4).hex()}'
    cluster.kubectl('create', 'namespace', name)
    yield name
    cluster.kubectl('delete', 'namespace', name, '--wait=false', '--ignore-not-found')


@pytest.fixture
def sharded_namespace(sharded: Cluster) -> Iterator[str]:
    yield from make_namespace(sharded)


@pytest.fixture
def unsharded_namespace(unsharded: Cluster) -> Iterator[str]:
    yield from make_namespace(unsharded)


@pytest.fixture
def default_namespace(default: Cluster) -> Iterator[str]:
    yield from make_namespace(default)


def create_config_maps(cluster: Cluster, namespace: str, count: int = OBJECTS) -> list[dict[str, Any]]:
    """ConfigMaps with server-made uids: the hashes are as random as in real life."""
    items = [{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': f'cm-{i:02d}'}} for i in range(count)]
    manifest = json.dumps({'apiVersion': 'v1', 'kind': 'List', 'items': items})
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=manifest)
    return get(cluster, f'/api/v1/namespaces/{namespace}/configmaps')['items']  # type: ignore[no-any-return]


def get(cluster: Cluster, path: str, **params: str) -> dict[str, Any]:
    query = f'?{urllib.parse.urlencode(params)}' if params else ''
    return json.loads(cluster.kubectl('get', '--raw', f'{path}{query}').stdout)  # type: ignore[no-any-return]


def stream(cluster: Cluster, path: str, **params: str) -> list[dict[str, Any]]:
    """The events of a watch that the server closes after ``timeoutSeconds``."""
    query = urllib.parse.urlencode({'watch': 'true', 'timeoutSeconds': '2', **params})
    stdout = cluster.kubectl('get', '--raw', f'{path}?{query}').stdout
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def streaming_list(cluster: Cluster, path: str, **params: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The objects sent as the initial events of a streaming list, and the bookmarks after them."""
    events = stream(cluster, path, sendInitialEvents='true', resourceVersionMatch='NotOlderThan',
                    allowWatchBookmarks='true', **params)
    added = [event['object'] for event in events if event['type'] == 'ADDED']
    bookmarks = [event['object'] for event in events if event['type'] == 'BOOKMARK']
    return added, bookmarks


def names(objects: list[dict[str, Any]]) -> set[str]:
    return {obj['metadata']['name'] for obj in objects}


def feature_enabled(cluster: Cluster, name: str) -> bool:
    """What the API server itself reports of a gate (its ``kubernetes_feature_enabled`` metric)."""
    metrics = cluster.kubectl('get', '--raw', '/metrics').stdout
    match = re.search(rf'^kubernetes_feature_enabled{{name="{name}",[^}}]*}} (\d)$', metrics, re.MULTILINE)
    assert match is not None, f'The API server does not report the feature gate {name}.'
    return match.group(1) == '1'


# --- The gates as set ---

def test_gates_reach_the_api_server(sharded: Cluster, unsharded: Cluster) -> None:
    assert sharded.control_plane is not None and unsharded.control_plane is not None
    assert sharded.control_plane.feature_gates == {'ShardedListAndWatch': True}
    assert feature_enabled(sharded, 'ShardedListAndWatch')
    assert not feature_enabled(unsharded, 'ShardedListAndWatch')


# --- ShardedListAndWatch on: the server filters as the framework does ---

def test_sharded_lists_keep_the_objects_whose_uid_hash_is_in_range(sharded: Cluster, sharded_namespace: str) -> None:
    everything = create_config_maps(sharded, sharded_namespace)
    seen: list[set[str]] = []
    for selector in QUARTERS:
        page = get(sharded, f'/api/v1/namespaces/{sharded_namespace}/configmaps', shardSelector=selector)
        assert page['metadata']['shardInfo'] == {'selector': selector}
        expected = names([obj for obj in everything if shards.parse(selector).matches(obj)])
        assert names(page['items']) == expected, selector
        seen.append(expected)
    assert sum(map(len, seen)) == len(everything) and set().union(*seen) == names(everything)
    assert sum(1 for quarter in seen if quarter) >= 2  # the split really splits


def test_ranges_joined_with_or_keep_the_union(sharded: Cluster, sharded_namespace: str) -> None:
    everything = create_config_maps(sharded, sharded_namespace)
    selector = f'{QUARTERS[0]} || {QUARTERS[3]}'
    page = get(sharded, f'/api/v1/namespaces/{sharded_namespace}/configmaps', shardSelector=selector)
    assert names(page['items']) == names([obj for obj in everything if shards.parse(selector).matches(obj)])


def test_sharded_lists_by_namespace_keep_whole_namespaces(sharded: Cluster, sharded_namespace: str) -> None:
    create_config_maps(sharded, sharded_namespace, count=2)
    everywhere = get(sharded, '/api/v1/configmaps')['items']
    selector = shards.format_range(NAMESPACE, 0, 1 << 63)
    page = get(sharded, '/api/v1/configmaps', shardSelector=selector)
    expected = {(obj['metadata']['namespace'], obj['metadata']['name'])
                for obj in everywhere if shards.parse(selector).matches(obj)}
    assert {(obj['metadata']['namespace'], obj['metadata']['name']) for obj in page['items']} == expected
    assert page['metadata']['shardInfo'] == {'selector': selector}


def test_custom_resources_are_filtered_but_their_lists_do_not_echo_shard_info(
        sharded: Cluster, sharded_namespace: str) -> None:
    """
    A fact of 1.37.2: the custom resources' lists are filtered, but without ``shardInfo``.

    A client that waits for the echo before it trusts the server (as the framework does)
    therefore filters custom resources again on its own side: the same objects, by the same hash.
    """
    apply_crds(sharded, EXAMPLES / 'crd.yaml')
    items = [{'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': f'kex-{i:02d}'}, 'spec': {}}
             for i in range(OBJECTS)]
    sharded.kubectl('apply', '-n', sharded_namespace, '-f', '-',
                    input=json.dumps({'apiVersion': 'v1', 'kind': 'List', 'items': items}))
    path = f'/apis/kopf.dev/v1/namespaces/{sharded_namespace}/kopfexamples'
    everything = get(sharded, path)['items']
    page = get(sharded, path, shardSelector=LOWER_HALF)
    assert names(page['items']) == names([obj for obj in everything if shards.parse(LOWER_HALF).matches(obj)])
    assert len(page['items']) < len(everything)
    assert 'shardInfo' not in page['metadata']


def test_sharded_watches_send_only_the_objects_in_range(sharded: Cluster, sharded_namespace: str) -> None:
    everything = create_config_maps(sharded, sharded_namespace)
    path = f'/api/v1/namespaces/{sharded_namespace}/configmaps'
    added, bookmarks = streaming_list(sharded, path, shardSelector=LOWER_HALF)
    assert names(added) == names([obj for obj in everything if shards.parse(LOWER_HALF).matches(obj)])
    assert any(b['metadata'].get('annotations', {}).get(INITIAL_EVENTS_END) == 'true' for b in bookmarks)


def test_malformed_shard_selectors_are_refused_like_the_framework_refuses_them(
        sharded: Cluster, sharded_namespace: str,
) -> None:
    selector = "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')"  # unpadded bounds
    with pytest.raises(shards.ShardSelectorError):
        shards.parse(selector)
    result = sharded.kubectl('get', '--raw', f'/api/v1/namespaces/{sharded_namespace}/configmaps?'
                             f'{urllib.parse.urlencode({"shardSelector": selector})}', check=False)
    assert result.returncode != 0, result.stdout
    assert "did you mean '0x0000000000000000'" in result.stderr.replace('\\"', "'").replace('"', "'"), result.stderr


# --- ShardedListAndWatch off: the selector is ignored, the framework must filter ---

def test_without_the_gate_shard_selectors_are_ignored(unsharded: Cluster, unsharded_namespace: str) -> None:
    everything = create_config_maps(unsharded, unsharded_namespace)
    path = f'/api/v1/namespaces/{unsharded_namespace}/configmaps'
    page = get(unsharded, path, shardSelector=LOWER_HALF)
    assert names(page['items']) == names(everything)
    assert 'shardInfo' not in page['metadata']
    added, _ = streaming_list(unsharded, path, shardSelector=LOWER_HALF)
    assert names(added) == names(everything)


# --- WatchList (streaming lists) with the release's default ---

def test_streaming_lists_work_by_default(default: Cluster, default_namespace: str) -> None:
    assert feature_enabled(default, 'WatchList')
    everything = create_config_maps(default, default_namespace, count=5)
    added, bookmarks = streaming_list(default, f'/api/v1/namespaces/{default_namespace}/configmaps')
    assert names(added) == names(everything)
    ends = [b for b in bookmarks if b['metadata'].get('annotations', {}).get(INITIAL_EVENTS_END) == 'true']
    assert len(ends) == 1
    assert int(ends[0]['metadata']['resourceVersion']) >= max(int(o['metadata']['resourceVersion']) for o in added)
