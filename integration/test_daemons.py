"""
Daemons, timers and indices against a real API server.

Inputs: objects labelled to select which daemon/timer accompanies them
(``operators_src/daemons.py``), deleted or relabelled by the tests.
Outputs: the daemons' own log lines with wall-clock times, and the objects'
finalizers. The timing bounds are those the manual promises (the flag is set
on deletion at once; the idle timer waits for its idle period).
"""
import asyncio
import itertools
import json
import pathlib
import re
import time
from collections.abc import Callable

import pytest

import kopf
import kopf_client
from integration.controlplane import Cluster
from integration.operating import OperatorProcess

DAEMONS = str(pathlib.Path(__file__).parent / 'operators_src' / 'daemons.py')
INDICES = str(pathlib.Path(__file__).parent / 'operators_src' / 'index_prepopulation.py')
FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'


pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture
def operator(operator_process: Callable[..., OperatorProcess]) -> OperatorProcess:
    process = operator_process(DAEMONS, '--verbose')
    process.wait_for(r"Starting the watch-stream for kopfexamples")
    return process


def create(cluster: Cluster, namespace: str, name: str, labels: dict[str, str]) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
        'metadata': {'name': name, 'labels': labels}, 'spec': {}}))


def logged_time(log: str, pattern: str) -> float:
    match = re.search(pattern + r' at (\d+\.\d+)', log)
    assert match, f"No {pattern!r} in:\n{log}"
    return float(match.group(1))


@pytest.mark.parametrize('kind', ['sync', 'async'])
def test_daemon_stops_within_a_second_of_the_deletion(
        cluster: Cluster, namespace: str, operator: OperatorProcess, kind: str) -> None:
    create(cluster, namespace, 'obj', {'daemon': kind})
    operator.wait_for(rf"{kind} daemon of obj started")
    deleted_at = time.time()
    cluster.kubectl('delete', '-n', namespace, 'kopfexample', 'obj', '--wait=false')
    log = operator.wait_for(rf"{kind} daemon of obj stopped", timeout=10)
    stopped_at = logged_time(log, rf"{kind} daemon of obj stopped")
    assert stopped_at - deleted_at < 1.0
    assert 'RESOURCE_DELETED' in log
    operator.wait_for(r"\[.*/obj\] Deleted, really deleted, and we are notified\.")


def test_daemon_ignoring_the_flag_is_abandoned_and_the_object_released(
        cluster: Cluster, namespace: str, operator_process: Callable[..., OperatorProcess]) -> None:
    # The abandoned daemon's task is still pending when the operator exits, and asyncio logs that.
    operator = operator_process(DAEMONS, '--verbose', expected_errors=[r'Task was destroyed but it is pending'])
    operator.wait_for(r"Starting the watch-stream for kopfexamples")
    create(cluster, namespace, 'obj', {'daemon': 'stubborn'})
    operator.wait_for(r"stubborn daemon of obj started")
    obj = json.loads(cluster.kubectl('get', '-n', namespace, 'kopfexample', 'obj', '-o', 'json').stdout)
    assert FINALIZER in obj['metadata']['finalizers']  # held while the daemon runs
    cluster.kubectl('delete', '-n', namespace, 'kopfexample', 'obj', '--wait=false')
    log = operator.wait_for(r"Deleted, really deleted, and we are notified\.", timeout=15)
    assert "stubborn daemon of obj ignores the cancellation" in log
    assert "Daemon 'stubborn_daemon' did not exit in time: abandoned" in log


def test_daemon_stops_when_filters_stop_matching_and_respawns_when_they_match_again(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'obj', {'watched': 'yes'})
    operator.wait_for(r"filtered daemon of obj started")
    cluster.kubectl('label', '-n', namespace, 'kopfexample', 'obj', 'watched=no', '--overwrite')
    log = operator.wait_for(r"filtered daemon of obj stopped", timeout=10)
    assert 'FILTERS_MISMATCH' in log
    cluster.kubectl('label', '-n', namespace, 'kopfexample', 'obj', 'watched=yes', '--overwrite')
    operator.wait_for(r"filtered daemon of obj started", count=2, timeout=10)


def test_timer_with_idle_and_interval_follows_the_schedule(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    created_at = time.time()
    create(cluster, namespace, 'obj', {'timer': 'idle'})
    log = operator.wait_for(r"idle timer of obj ticked", count=3, timeout=20)
    ticks = [float(t) for t in re.findall(r"idle timer of obj ticked at (\d+\.\d+)", log)]
    assert ticks[0] - created_at >= 3.0  # the creation is a change: idle first
    assert all(0.9 <= later - earlier < 2.0 for earlier, later in itertools.pairwise(ticks[:3]))

    changed_at = time.time()
    cluster.kubectl('label', '-n', namespace, 'kopfexample', 'obj', 'changed=yes')
    log = operator.wait_for(r"idle timer of obj ticked", count=len(ticks) + 2, timeout=20)
    later_ticks = [float(t) for t in re.findall(r"idle timer of obj ticked at (\d+\.\d+)", log)]
    after_change = [t for t in later_ticks if t > changed_at]
    assert after_change and after_change[0] - changed_at >= 3.0  # idles again after the change


def test_timers_and_daemons_as_in_kopf_1_45_2(
        cluster: Cluster, namespace: str, operator_process: Callable[..., OperatorProcess]) -> None:
    operator = operator_process(DAEMONS, '--verbose', expected_errors=[r'failing for good'])
    operator.wait_for(r"Starting the watch-stream for kopfexamples")
    created_at = time.time()  # before the creation: the timer cannot start earlier (kubectl may return later)
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
        'metadata': {'name': 'obj', 'labels': {'timer': 'parity'}}, 'spec': {'delay': 2}}))
    # The callable initial_delay (2 s from the spec), then a run every second despite the permanent failures.
    log = operator.wait_for(r"failing timer of obj ran", count=3, timeout=20)
    runs = [float(t) for t in re.findall(r"failing timer of obj ran \(retry 0\) at (\d+\.\d+)", log)]
    assert len(runs) >= 3
    assert runs[0] - created_at >= 2.0
    assert all(0.9 <= later - earlier < 2.0 for earlier, later in itertools.pairwise(runs[:3]))
    # The default owner is the live object: the child gets the labels changed since the daemon started.
    operator.wait_for(r"adopting daemon of obj labels a child with \{'timer': 'parity'\}")
    cluster.kubectl('label', '-n', namespace, 'kopfexample', 'obj', 'extra=yes')
    log = operator.wait_for(r"adopting daemon of obj labels a child with \{[^}]*'extra': 'yes'", timeout=10)
    # A timer without interval= or idle=: once per object, not again on the later change.
    assert len(re.findall(r"unscheduled timer of obj ran", log)) == 1


async def create_many(cluster: Cluster, namespace: str, count: int) -> None:
    assert cluster.control_plane is not None
    info = kopf.ConnectionInfo(server=cluster.server, token=cluster.admin_token,
                               ca_path=str(cluster.control_plane.ca_path))
    client = kopf_client.driver.create_client(vault=kopf.Vault({'admin': info}), settings=kopf.OperatorSettings())
    resource = kopf.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)
    semaphore = asyncio.Semaphore(32)

    async def create_one(index: int) -> None:
        async with semaphore:
            await client.create_object(resource, namespace=namespace, body={
                'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
                'metadata': {'name': f'obj-{index:04d}'}, 'spec': {}})
    try:
        await asyncio.gather(*(create_one(index) for index in range(count)))
    finally:
        await client.close()


def test_index_is_complete_before_the_first_handler_even_with_one_worker(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.skip("Creating 2000 objects quickly needs the local control plane's token (other clusters: skip).")
    asyncio.run(create_many(cluster, namespace, 2000))
    with OperatorProcess([INDICES, '-n', namespace], log_path=tmp_path / 'op.log') as op:
        log = op.wait_for(r"The first handler sees \d+ indexed objects\.", timeout=120)
    assert "The first handler sees 2000 indexed objects." in log


MANY = str(pathlib.Path(__file__).parent / 'operators_src' / 'many_daemons.py')


def test_a_daemon_and_a_timer_on_each_of_1000_objects(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.skip("Creating 1000 objects quickly needs the local control plane's token (other clusters: skip).")
    asyncio.run(create_many(cluster, namespace, 1000))
    with OperatorProcess([MANY, '-n', namespace], log_path=tmp_path / 'op.log') as op:
        log = op.wait_for(r"1000 daemons are running: \d+ tasks, RSS [\d.]+ MiB\.", timeout=180)
    match = re.search(r"1000 daemons are running: (\d+) tasks, RSS ([\d.]+) MiB\.", log)
    assert match
    tasks, rss = int(match.group(1)), float(match.group(2))
    print(f"\nA daemon and a timer on each of 1000 objects: {tasks} asyncio tasks, RSS {rss:.1f} MiB.")
    assert tasks >= 2000  # one task per daemon and per timer, at least
