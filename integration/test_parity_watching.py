"""
Kopf 1.45's watching settings on a real API server: selectors, chunks, streaming lists, shards, inactivity.

Inputs: the operator ``operators_src/watching_parity.py`` with its settings from
environment variables, run with ``--verbose`` (DEBUG) against objects created
before it starts (and some after). Outputs: the operator's log (which objects it
handled, and which it never heard of at all), and its list requests, counted by a
proxy in front of it (how many LISTs the initial listing took).

The session's API server streams lists (WatchList is on by default since 1.34)
but does not shard them (the ShardedListAndWatch gate is alpha and off by default
in 1.36 and in the pinned 1.37.2): it ignores shard selectors, so the shards are
split by the operator's own filtering, by the same hash. Local control planes with
other gates show the rest: the API server's own split (each operator, behind a
counting proxy, receives only its shard's objects), and the fallback from
streaming lists to listing where WatchList is off.
"""
import json
import pathlib
import re
import secrets
from collections.abc import Callable
from typing import Any, Optional

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.gates import cluster_with_gates
from integration.operating import EXAMPLES
from integration.watchcounting import ProxyLoop
from kopf._cogs.structs import shards
from kopf_testing import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'watching_parity.py')
LOWER = shards.format_range('object.metadata.uid', 0, 1 << 63)
UPPER = shards.format_range('object.metadata.uid', 1 << 63, 1 << 64)
StartOperator = Callable[..., OperatorProcess]

pytestmark = pytest.mark.usefixtures('example_crd')


def create(cluster: Cluster, namespace: str, name: str, labels: Optional[dict[str, str]] = None) -> None:
    kubeobjects.create_object(cluster, namespace, {
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': name, 'labels': labels or {}}})


def start(operator_process: StartOperator, *, log_name: str = 'operator.log', **env: str) -> OperatorProcess:
    operator = operator_process(OPERATOR, '--standalone', '--verbose', env=env, log_name=log_name)
    operator.wait_for(r"Starting the watch-stream for kopfexamples", timeout=60)
    return operator


def handled(log: str) -> list[str]:
    return re.findall(r"Handled (\S+)\.$", log, flags=re.MULTILINE)


def mentioned(log: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", log) is not None


def uids(cluster: Cluster, namespace: str) -> dict[str, str]:
    output = cluster.kubectl('get', 'kopfexamples', '-n', namespace, '-o', 'json').stdout
    return {item['metadata']['name']: item['metadata']['uid'] for item in json.loads(output)['items']}


def lists_of_kopfexamples(cluster: Cluster, tmp_path: pathlib.Path, action: Callable[[pathlib.Path], Any]) -> int:
    """
    How many LIST requests of kopfexamples the operator made during the action (given its kubeconfig).

    Counted by a proxy in front of that operator alone: the API server's own counters also count
    the namespace controller's lists in every namespace being deleted, which other tests leave.
    """
    if cluster.control_plane is None:
        pytest.skip("The proxy that counts the requests is made for the local control plane (--cluster=local).")
    proxies = ProxyLoop(cluster.control_plane, tmp_path, plural='kopfexamples')
    try:
        proxy, kubeconfig = proxies.kubeconfig('counted')
        action(kubeconfig)
    finally:
        proxies.close()
    return proxy.lists


# --- Server-side watch selectors ---

def test_label_selectors_keep_unlabelled_objects_away_from_the_operator(
        cluster: Cluster, namespace: str, operator_process: StartOperator) -> None:
    for index in range(3):
        create(cluster, namespace, f'wanted-{index}', labels={'parity': 'yes'})
        create(cluster, namespace, f'other-{index}')
    operator = start(operator_process, PARITY_LABEL_SELECTOR='parity=yes')
    create(cluster, namespace, 'other-late')
    create(cluster, namespace, 'wanted-late', labels={'parity': 'yes'})
    operator.wait_for(r"Handled wanted-late\.", timeout=30)
    operator.wait_for(r"Handled wanted-2\.", timeout=30)
    log = operator.log
    assert sorted(handled(log)) == ['wanted-0', 'wanted-1', 'wanted-2', 'wanted-late']
    # Not filtered by the operator: it has never heard of them, not even at DEBUG.
    assert not any(mentioned(log, name) for name in ['other-0', 'other-1', 'other-2', 'other-late'])


def test_field_selectors_by_name_keep_other_objects_away_from_the_operator(
        cluster: Cluster, namespace: str, operator_process: StartOperator) -> None:
    for name in ['chosen', 'other-1', 'other-2']:
        create(cluster, namespace, name)
    operator = start(operator_process, PARITY_FIELD_SELECTOR='metadata.name=chosen')
    operator.wait_for(r"Handled chosen\.", timeout=30)
    create(cluster, namespace, 'other-late')
    kubeobjects.merge_patch(cluster, namespace, 'kopfexamples', 'chosen', {'spec': {'touched': True}})
    operator.wait_for(r"Event MODIFIED for chosen\.", timeout=30)
    log = operator.log
    assert handled(log) == ['chosen']
    assert not any(mentioned(log, name) for name in ['other-1', 'other-2', 'other-late'])


def test_field_selectors_by_namespace_hide_the_other_namespaces_from_a_cluster_wide_operator(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    elsewhere = f'{namespace}-elsewhere'
    cluster.kubectl('create', 'namespace', elsewhere)
    try:
        create(cluster, namespace, 'here')
        create(cluster, elsewhere, 'there')
        env = {'PARITY_FIELD_SELECTOR': f'metadata.namespace={namespace}'}
        with OperatorProcess([OPERATOR, '--standalone', '--verbose', '--all-namespaces'],
                             log_path=tmp_path / 'operator.log', env=env) as operator:
            operator.wait_for(r"Handled here\.", timeout=60)
            create(cluster, elsewhere, 'there-late')
            create(cluster, namespace, 'here-late')
            operator.wait_for(r"Handled here-late\.", timeout=30)
            log = operator.log
        assert sorted(handled(log)) == ['here', 'here-late']
        assert not mentioned(log, 'there') and not mentioned(log, 'there-late') and elsewhere not in log
    finally:
        cluster.kubectl('delete', 'namespace', elsewhere, '--wait=false')


# --- The initial listing: in chunks, or streamed ---

def test_a_chunked_initial_listing_handles_all_the_objects(
        cluster: Cluster, namespace: str, operator_process: StartOperator, tmp_path: pathlib.Path) -> None:
    names = [f'obj-{index}' for index in range(7)]
    for name in names:
        create(cluster, namespace, name)

    def run(kubeconfig: pathlib.Path) -> None:
        operator = start(operator_process, PARITY_CHUNK_SIZE='2', KUBECONFIG=str(kubeconfig))
        operator.wait_for(r"Handled obj-\d\.", count=7, timeout=60)
        assert sorted(handled(operator.log)) == names
        assert [f'obj-{i}' for i in range(7)] == sorted(re.findall(r"Event None for (\S+)\.", operator.log))
        operator.stop()

    assert lists_of_kopfexamples(cluster, tmp_path, run) == 4  # 2 + 2 + 2 + 1


def test_a_whole_initial_listing_is_one_list_request_by_default(
        cluster: Cluster, namespace: str, operator_process: StartOperator, tmp_path: pathlib.Path) -> None:
    for index in range(7):
        create(cluster, namespace, f'obj-{index}')

    def run(kubeconfig: pathlib.Path) -> None:
        operator = start(operator_process, KUBECONFIG=str(kubeconfig))
        operator.wait_for(r"Handled obj-\d\.", count=7, timeout=60)
        operator.stop()

    assert lists_of_kopfexamples(cluster, tmp_path, run) == 1


def test_a_streaming_initial_listing_handles_all_the_objects_without_listing(
        cluster: Cluster, namespace: str, operator_process: StartOperator, tmp_path: pathlib.Path) -> None:
    names = [f'obj-{index}' for index in range(7)]
    for name in names:
        create(cluster, namespace, name)

    def run(kubeconfig: pathlib.Path) -> None:
        operator = start(operator_process, PARITY_INITIAL_STREAMING='true', KUBECONFIG=str(kubeconfig))
        operator.wait_for(r"Handled obj-\d\.", count=7, timeout=60)
        create(cluster, namespace, 'late')
        operator.wait_for(r"Handled late\.", timeout=30)
        log = operator.log
        operator.stop()
        assert sorted(handled(log)) == sorted([*names, 'late']) and handled(log).count('late') == 1
        # The pre-existing objects come as the initial listing (None), the later one as a change.
        assert sorted(re.findall(r"Event None for (\S+)\.", log)) == names
        assert 'Event ADDED for late.' in log
        assert 'refuses streaming lists' not in log  # the pinned Kubernetes streams them (1.34+)

    assert lists_of_kopfexamples(cluster, tmp_path, run) == 0


# --- Shards ---

def test_two_operators_with_complementary_shards_handle_each_object_exactly_once(
        cluster: Cluster, namespace: str, operator_process: StartOperator) -> None:
    names = [f'obj-{index}' for index in range(10)]
    for name in names:
        create(cluster, namespace, name)
    lower_selector = shards.parse(LOWER)
    expected_lower = sorted(name for name, uid in uids(cluster, namespace).items()
                            if lower_selector.matches({'metadata': {'uid': uid}}))
    lower = start(operator_process, log_name='lower.log', PARITY_SHARD_SELECTOR=LOWER)
    upper = start(operator_process, log_name='upper.log', PARITY_SHARD_SELECTOR=UPPER)
    if expected_lower:
        lower.wait_for(r"Handled obj-\d\.", count=len(expected_lower), timeout=60)
    if len(expected_lower) < len(names):
        upper.wait_for(r"Handled obj-\d\.", count=len(names) - len(expected_lower), timeout=60)
    create(cluster, namespace, 'late')
    (lower if lower_selector.matches({'metadata': {'uid': uids(cluster, namespace)['late']}}) else upper).wait_for(
        r"Handled late\.", timeout=30)
    lower_log, upper_log = lower.log, upper.log
    by_lower, by_upper = handled(lower_log), handled(upper_log)
    assert sorted(by_lower + by_upper) == sorted([*names, 'late'])  # each exactly once
    assert sorted(name for name in by_lower if name != 'late') == expected_lower  # the API server's split
    # Without the ShardedListAndWatch gate, the API server ignores shard selectors: the operators filter.
    assert "on the operator's side" in lower_log and "on the operator's side" in upper_log


# --- Other feature gates: the API server's own shards, no streaming lists ---

def gated(kopf_gated_cluster: Callable[[dict[str, bool]], Cluster], **gates: bool) -> tuple[Cluster, str]:
    """A local control plane with these gates, the examples' CRD, and a fresh namespace in it (or skipped)."""
    cluster = cluster_with_gates(kopf_gated_cluster, gates)
    kubeobjects.apply_crds(cluster, EXAMPLES / 'crd.yaml')
    namespace = f'test-watching-{secrets.token_hex(4)}'
    cluster.kubectl('create', 'namespace', namespace)
    return cluster, namespace


def start_on(cluster: Cluster, namespace: str, tmp_path: pathlib.Path, name: str,
             kubeconfig: Optional[pathlib.Path] = None, **env: str) -> OperatorProcess:
    kubeconfig = cluster.kubeconfig if kubeconfig is None else kubeconfig
    operator = OperatorProcess([OPERATOR, '-n', namespace, '--standalone', '--verbose'],
                               log_path=tmp_path / f'{name}.log', env={'KUBECONFIG': str(kubeconfig), **env})
    operator.start()
    operator.wait_for(r"Starting the watch-stream for kopfexamples", timeout=60)
    return operator


def test_with_sharded_list_and_watch_the_api_server_splits_the_objects_the_same_way(
        kopf_gated_cluster: Callable[[dict[str, bool]], Cluster], tmp_path: pathlib.Path) -> None:
    """
    Each operator RECEIVES only its shard's objects (counted on the wire by a proxy in front of each).

    Where the pinned release lacks the gate, the gated cluster does not start and the test is skipped.
    Custom resources' lists carry no ``shardInfo`` in 1.37.2 (see test_controlplane_gates.py), so the
    operators also filter on their side, by the same hash: nothing more is dropped there.
    """
    cluster, namespace = gated(kopf_gated_cluster, ShardedListAndWatch=True)
    assert cluster.control_plane is not None  # the gated clusters are local control planes
    names = [f'obj-{index}' for index in range(10)]
    for name in names:
        create(cluster, namespace, name)
    by_name = uids(cluster, namespace)
    lower_selector = shards.parse(LOWER)
    expected_lower = sorted(name for name, uid in by_name.items() if lower_selector.matches({'metadata': {'uid': uid}}))
    proxies = ProxyLoop(cluster.control_plane, tmp_path, plural='kopfexamples')
    try:
        lower_proxy, lower_kubeconfig = proxies.kubeconfig('lower')
        upper_proxy, upper_kubeconfig = proxies.kubeconfig('upper')
        lower = start_on(cluster, namespace, tmp_path, 'lower', lower_kubeconfig, PARITY_SHARD_SELECTOR=LOWER)
        upper = start_on(cluster, namespace, tmp_path, 'upper', upper_kubeconfig, PARITY_SHARD_SELECTOR=UPPER)
        try:
            if expected_lower:
                lower.wait_for(r"Handled obj-\d\.", count=len(expected_lower), timeout=60)
            if len(expected_lower) < len(names):
                upper.wait_for(r"Handled obj-\d\.", count=len(names) - len(expected_lower), timeout=60)
            lower_log, upper_log = lower.log, upper.log
        finally:
            lower.stop()
            upper.stop()
    finally:
        proxies.close()
    assert sorted(handled(lower_log)) == expected_lower
    assert sorted(handled(lower_log) + handled(upper_log)) == names
    # The API server has filtered: each operator received (listed or watched) its own objects and no other.
    received_lower = {name for name, uid in by_name.items() if uid in {*lower_proxy.listed, *lower_proxy.uids}}
    received_upper = {name for name, uid in by_name.items() if uid in {*upper_proxy.listed, *upper_proxy.uids}}
    assert sorted(received_lower) == expected_lower
    assert sorted(received_upper) == sorted(set(names) - set(expected_lower))
    assert not any(mentioned(lower_log, name) for name in names if name not in expected_lower)


def test_streaming_lists_refused_by_the_api_server_fall_back_to_listing(
        kopf_gated_cluster: Callable[[dict[str, bool]], Cluster], tmp_path: pathlib.Path) -> None:
    cluster, namespace = gated(kopf_gated_cluster, WatchList=False)
    names = [f'obj-{index}' for index in range(7)]
    for name in names:
        create(cluster, namespace, name)
    operator = start_on(cluster, namespace, tmp_path, 'operator', PARITY_INITIAL_STREAMING='true')
    try:
        operator.wait_for(r"Handled obj-\d\.", count=7, timeout=60)
        log = operator.log
    finally:
        operator.stop()
    assert sorted(handled(log)) == names
    assert sorted(re.findall(r"Event None for (\S+)\.", log)) == names  # still the initial listing
    assert re.search(r"The API server refuses streaming lists of kopfexamples\.v1\.kopf\.dev \(.*WatchList.*\): "
                     r"listing them instead\.", log), log


# --- Inactivity ---

def test_the_inactivity_timeout_is_70_seconds_by_default(operator_process: StartOperator) -> None:
    operator = start(operator_process)
    assert 'Watching inactivity timeout: 70.0.' in operator.log


def test_a_silent_watch_stream_is_reconnected_after_the_inactivity_timeout(
        operator_process: StartOperator) -> None:
    operator = start(operator_process, PARITY_INACTIVITY_TIMEOUT='2')
    assert 'Watching inactivity timeout: 2.0.' in operator.log
    operator.wait_for(r"Watch-stream for kopfexamples\.v1\.kopf\.dev in '[^']+' is inactive, reconnecting\.",
                      count=2, timeout=15)
