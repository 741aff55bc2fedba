"""
Leader election through a real API server: two replicas, one Lease, one handler run per object.

Inputs: two ``kopf run --leader-election`` processes of ``operators_src/leader_election.py``
(a create handler and a daemon per object, with short Lease timings), the
``coordination.k8s.io`` Lease they compete for, and for one test the chaos proxy
between a replica and the API server. Outputs: the calls file that the handlers
append to (pid, object, handler, time — never the logs for counts), the Lease as
stored, and the operators' logs for their one-line messages. Nothing is mocked.
"""
import asyncio
import datetime
import json
import pathlib
import re
import signal
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any, Optional

import pytest
from aiohttp import web

from integration import kubeobjects
from integration.chaos import _proxy, _schedule
from integration.controlplane import Cluster
from integration.operating import EXAMPLES, REPO_ROOT, OperatorProcess, kopf_executable
from kopf_testing._polling import DEFAULT_TIMEOUT, patient

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'leader_election.py')
GROUP, PLURAL, KIND = 'leader.kopf.dev', 'leaderthings', 'LeaderThing'
LEASE = 'test-leader'
TIMINGS = {'LEASE_DURATION': '6', 'RENEW_DEADLINE': '4', 'RETRY_PERIOD': '1'}
LEASE_DURATION = float(TIMINGS['LEASE_DURATION'])


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    kubeobjects.apply_crds(cluster, kubeobjects.crd_manifest(GROUP, PLURAL, KIND))


@pytest.fixture
def calls_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / 'calls.jsonl'
    path.touch()
    return path


def read_calls(path: pathlib.Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Replicas:
    """The operator processes of one test, each logging into its own file; all stopped at the end."""

    def __init__(self, namespace: str, calls_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
        self.namespace = namespace
        self.calls_file = calls_file
        self.tmp_path = tmp_path
        self.started: list[OperatorProcess] = []

    def start(self, name: str, *extra: str, kubeconfig: Optional[pathlib.Path] = None,
              lease: str = LEASE, standalone: bool = True) -> OperatorProcess:
        env = dict(TIMINGS, CALLS_FILE=str(self.calls_file))
        if kubeconfig is not None:
            env['KUBECONFIG'] = str(kubeconfig)
        process = OperatorProcess([OPERATOR, '-n', self.namespace, '--verbose', f'--leader-election={lease}',
                                   *(['--standalone'] if standalone else []), *extra],
                                  log_path=self.tmp_path / f'{name}.log', env=env)
        process.start()
        self.started.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.started:
            if process.process is not None and process.process.poll() is None:
                process.process.kill()
                process.process.wait()


@pytest.fixture
def replicas(namespace: str, calls_file: pathlib.Path, tmp_path: pathlib.Path) -> Iterator[Replicas]:
    made = Replicas(namespace, calls_file, tmp_path)
    yield made
    made.stop_all()


def pid_of(process: OperatorProcess) -> int:
    assert process.process is not None
    return process.process.pid


def create(cluster: Cluster, namespace: str, name: str) -> None:
    kubeobjects.create_object(cluster, namespace, {
        'apiVersion': f'{GROUP}/v1', 'kind': KIND, 'metadata': {'name': name}, 'spec': {}})


def wait_for_call(calls_file: pathlib.Path, *, obj: str, handler: str, pid: Optional[int] = None,
                  timeout: float = 30) -> dict[str, Any]:
    def found() -> Optional[dict[str, Any]]:
        return next((call for call in read_calls(calls_file)
                     if call['object'] == obj and call['handler'] == handler
                     and (pid is None or call['pid'] == pid)), None)
    return kubeobjects.poll(found, timeout=timeout)


def lease_spec(cluster: Cluster, namespace: str, name: str = LEASE) -> dict[str, Any]:
    lease = json.loads(cluster.kubectl('get', 'lease', name, '-n', namespace, '-o', 'json').stdout)
    return lease['spec']  # type: ignore[no-any-return]


def micro_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace('Z', '+00:00')).timestamp()


def assert_each_handler_ran_once(calls_file: pathlib.Path, objects: list[str]) -> None:
    """Every object's create handler ran exactly once, whichever replica ran it: no re-run after success."""
    calls = read_calls(calls_file)
    for obj in objects:
        assert [call['handler'] for call in calls if call['object'] == obj].count('create') == 1, obj


def assert_daemons_never_overlap(calls_file: pathlib.Path, obj: str) -> None:
    """The daemon's heartbeats come from one process at a time: a new process only after the last one stopped."""
    beats = [call for call in read_calls(calls_file) if call['object'] == obj and call['handler'] == 'heartbeat']
    runs: list[int] = []
    for beat in beats:
        if not runs or runs[-1] != beat['pid']:
            assert beat['pid'] not in runs, f"{beat['pid']} beats again after another process took over"
            runs.append(beat['pid'])


def became_leader(process: OperatorProcess, timeout: float = 30) -> None:
    process.wait_for(r"Became the leader: the Lease .* is held by", timeout=timeout)


def standing_by(process: OperatorProcess, timeout: float = 30) -> None:
    """The replica has seen the Lease held by another: from now on, it judges the expiry on its own."""
    process.wait_for(r"The Lease .* is held by .*: standing by as a candidate\.", timeout=timeout)


def test_one_replica_leads_and_the_other_handles_nothing(
        cluster: Cluster, namespace: str, replicas: Replicas, calls_file: pathlib.Path) -> None:
    leader = replicas.start('a')
    became_leader(leader)
    follower = replicas.start('b')
    standing_by(follower)
    for name in ('one', 'two'):
        create(cluster, namespace, name)
        wait_for_call(calls_file, obj=name, handler='heartbeat', pid=pid_of(leader))
    time.sleep(2)
    assert {call['pid'] for call in read_calls(calls_file)} == {pid_of(leader)}
    assert "Became the leader" not in follower.log
    spec = lease_spec(cluster, namespace)
    assert spec['holderIdentity'] and spec['leaseDurationSeconds'] == 6 and spec['leaseTransitions'] == 0
    assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z', spec['renewTime'])
    assert_each_handler_ran_once(calls_file, ['one', 'two'])


def test_kill_9_of_the_leader_hands_over_within_the_lease_duration(
        cluster: Cluster, namespace: str, replicas: Replicas, calls_file: pathlib.Path) -> None:
    leader = replicas.start('a')
    became_leader(leader)
    follower = replicas.start('b')
    standing_by(follower)
    create(cluster, namespace, 'before')
    wait_for_call(calls_file, obj='before', handler='heartbeat', pid=pid_of(leader))
    wait_for_call(calls_file, obj='before', handler='create', pid=pid_of(leader))
    time.sleep(1)  # the handler's success is stored

    assert leader.process is not None
    killed_at = time.time()
    leader.process.kill()
    create(cluster, namespace, 'after')
    handled = wait_for_call(calls_file, obj='after', handler='create', pid=pid_of(follower), timeout=60)
    acquired = micro_time(lease_spec(cluster, namespace)['acquireTime'])
    assert acquired - killed_at <= LEASE_DURATION
    assert handled['time'] - killed_at <= LEASE_DURATION + 3  # the acquisition, then a listing and a cycle
    wait_for_call(calls_file, obj='before', handler='heartbeat', pid=pid_of(follower))
    assert lease_spec(cluster, namespace)['leaseTransitions'] == 1
    assert_each_handler_ran_once(calls_file, ['before', 'after'])
    assert_daemons_never_overlap(calls_file, 'before')


def test_a_graceful_stop_hands_over_in_under_a_second(
        cluster: Cluster, namespace: str, replicas: Replicas, calls_file: pathlib.Path) -> None:
    leader = replicas.start('a')
    became_leader(leader)
    follower = replicas.start('b')
    standing_by(follower)
    create(cluster, namespace, 'obj')
    wait_for_call(calls_file, obj='obj', handler='heartbeat', pid=pid_of(leader))
    time.sleep(2)  # the follower is watching the Lease; the handler's success is stored

    assert leader.process is not None
    stopped_at = time.time()
    leader.process.send_signal(signal.SIGTERM)
    became_leader(follower, timeout=20)
    spec = lease_spec(cluster, namespace)
    handover = micro_time(spec['acquireTime']) - stopped_at
    assert handover < 1.0, f"hand-over took {handover:.3f}s"
    assert leader.process.wait(timeout=patient(DEFAULT_TIMEOUT)) == 0
    assert "Released the Lease" in leader.log
    wait_for_call(calls_file, obj='obj', handler='heartbeat', pid=pid_of(follower))
    assert_each_handler_ran_once(calls_file, ['obj'])
    assert_daemons_never_overlap(calls_file, 'obj')
    print(f"Hand-over after SIGTERM: {handover:.3f}s")


class CuttableProxy(_proxy.FaultProxy):
    """The chaos proxy, which can also cut its operator off: every connection dropped, none forwarded."""

    cut = False

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self.cut:
            _proxy._abort(request)
            return web.Response(status=502)
        return await super()._handle(request)

    def cut_off(self) -> None:
        self.cut = True
        for _ in range(self.open_watches):
            self.inject(_schedule.Fault(at=0, kind=_schedule.DROP_WATCH, count=1, seconds=0, status=0))


class ProxyThread:
    """The proxy's event loop in a thread of its own, beside the synchronous test."""

    def __init__(self, cluster: Cluster, journal: pathlib.Path) -> None:
        assert cluster.control_plane is not None
        context = ssl.create_default_context(cafile=str(cluster.control_plane.ca_path))
        self.proxy = CuttableProxy(cluster.control_plane.server, context, journal)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> str:
        self.thread.start()
        return asyncio.run_coroutine_threadsafe(self.proxy.start(), self.loop).result(timeout=10)

    def cut_off(self) -> None:
        self.loop.call_soon_threadsafe(self.proxy.cut_off)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.stop(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture
def proxied_kubeconfig(cluster: Cluster, tmp_path: pathlib.Path) -> Iterator[tuple[ProxyThread, pathlib.Path]]:
    if cluster.control_plane is None:
        pytest.fail("This test puts a replica behind the chaos proxy of the local control plane (--cluster=local).")
    proxy = ProxyThread(cluster, tmp_path / 'faults.jsonl')
    url = proxy.start()
    path = tmp_path / 'proxied-kubeconfig'
    path.touch(mode=0o600)
    path.write_text(json.dumps({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'proxied',
        'clusters': [{'name': 'proxy', 'cluster': {'server': url}}],
        'users': [{'name': 'admin', 'user': {'token': cluster.admin_token}}],
        'contexts': [{'name': 'proxied', 'context': {'cluster': 'proxy', 'user': 'admin'}}],
    }))
    yield proxy, path
    proxy.stop()


def test_a_leader_cut_off_stops_handling_before_its_lease_expires(
        cluster: Cluster, namespace: str, replicas: Replicas, calls_file: pathlib.Path,
        proxied_kubeconfig: tuple[ProxyThread, pathlib.Path]) -> None:
    proxy, kubeconfig = proxied_kubeconfig
    leader = replicas.start('a', kubeconfig=kubeconfig)
    became_leader(leader)
    follower = replicas.start('b')
    standing_by(follower)
    create(cluster, namespace, 'obj')
    wait_for_call(calls_file, obj='obj', handler='heartbeat', pid=pid_of(leader))
    time.sleep(2)

    cut_at = time.time()
    proxy.cut_off()
    leader.wait_for(r"Lost the leadership of the Lease .*\(not renewed within the renew deadline of 4s\); "
                    r"stopped handling\.", timeout=30)
    taken_over = wait_for_call(calls_file, obj='obj', handler='heartbeat', pid=pid_of(follower), timeout=60)
    calls = read_calls(calls_file)
    last_beat = max(call['time'] for call in calls if call['pid'] == pid_of(leader) and call['handler'] == 'heartbeat')
    assert last_beat < taken_over['time'], "the cut-off leader's daemon still ran when the other's started"
    assert last_beat - cut_at < LEASE_DURATION
    assert_each_handler_ran_once(calls_file, ['obj'])
    assert_daemons_never_overlap(calls_file, 'obj')
    print(f"Cut off at 0s; the old leader's last heartbeat at {last_beat - cut_at:.2f}s; "
          f"the new leader's first at {taken_over['time'] - cut_at:.2f}s")


def test_a_freeze_pauses_the_leader_and_its_daemons_while_it_keeps_the_lease(
        cluster: Cluster, namespace: str, replicas: Replicas, calls_file: pathlib.Path) -> None:
    kubeobjects.apply_peering_crds(cluster, EXAMPLES)
    kubeobjects.create_peering(cluster, namespace, 'default')
    leader = replicas.start('a', standalone=False)
    became_leader(leader)
    create(cluster, namespace, 'obj')
    wait_for_call(calls_file, obj='obj', handler='heartbeat', pid=pid_of(leader))

    peering = ['-n', namespace, '--peering', 'default', '--id', 'freezer']
    subprocess.run([kopf_executable(), 'freeze', *peering, '--lifetime', '60'], check=True, timeout=60)
    leader.wait_for(r"Pausing operations in favour of \[<Peer freezer", timeout=30)
    stopped = wait_for_call(calls_file, obj='obj', handler='daemon-exit', pid=pid_of(leader))
    renewed = lease_spec(cluster, namespace)['renewTime']
    time.sleep(3)
    assert not [call for call in read_calls(calls_file) if call['time'] > stopped['time']]  # paused: no beats
    spec = lease_spec(cluster, namespace)
    assert spec['renewTime'] > renewed and spec['leaseTransitions'] == 0  # still the leader, renewing

    subprocess.run([kopf_executable(), 'resume', *peering], check=True, timeout=60)
    leader.wait_for(r"Resuming operations after the pause\.", timeout=30)
    kubeobjects.poll(lambda: [call for call in read_calls(calls_file)
                              if call['time'] > stopped['time'] and call['handler'] == 'heartbeat'], timeout=30)
    assert_each_handler_ran_once(calls_file, ['obj'])


def test_a_lease_name_that_kubernetes_refuses_is_one_message_at_start(
        namespace: str, replicas: Replicas) -> None:
    process = replicas.start('bad', lease='Bad_Name!')
    assert process.process is not None
    assert process.process.wait(timeout=patient(DEFAULT_TIMEOUT)) == 1
    errors = [line for line in process.log.splitlines() if line.startswith('Error:')]
    assert errors == ["Error: The leader election's Lease name 'Bad_Name!' is not valid in Kubernetes: use at most "
                      "253 lowercase letters, digits, '-' and '.', starting and ending with a letter or a digit "
                      "(e.g. 'my-operator-leader')."]
    assert 'Traceback' not in process.log


def grant(cluster: Cluster, namespace: str, *, leases: bool) -> None:
    rules = [{'apiGroups': [GROUP], 'resources': [PLURAL, f'{PLURAL}/status'],
              'verbs': ['get', 'list', 'watch', 'patch']},
             {'apiGroups': [''], 'resources': ['events'], 'verbs': ['create']}]
    if leases:
        rules.append({'apiGroups': ['coordination.k8s.io'], 'resources': ['leases'],
                      'verbs': ['get', 'create', 'update', 'patch', 'watch']})
    cluster.kubectl('apply', '-f', '-', input=json.dumps({
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
        'metadata': {'name': 'operator', 'namespace': namespace}, 'rules': rules}))


def test_rbac_without_leases_is_one_line_and_retried_until_granted(
        cluster: Cluster, namespace: str, replicas: Replicas, calls_file: pathlib.Path) -> None:
    kubeconfig = cluster.service_account_kubeconfig(namespace, 'operator')
    grant(cluster, namespace, leases=False)
    cluster.kubectl('create', 'rolebinding', 'operator', '-n', namespace, '--role=operator',
                    f'--serviceaccount={namespace}:operator')
    process = replicas.start('restricted', kubeconfig=kubeconfig)
    create(cluster, namespace, 'obj')
    process.wait_for(r"Not permitted to use the Lease", timeout=30)
    time.sleep(5)  # retried every second meanwhile
    lines = [line for line in process.log.splitlines() if 'Not permitted' in line and '[DEBUG' not in line]
    assert len(lines) == 1, lines
    assert re.search(rf"ERROR.*Not permitted to use the Lease {namespace}/{LEASE} for leader election "
                     r"\(.*cannot get resource \\?\"leases\\?\".*\)\. Grant the operator get, create, update, patch "
                     rf"and watch on the leases of coordination\.k8s\.io in '{namespace}'; retrying every 1s\.",
                     lines[0]), lines[0]
    assert read_calls(calls_file) == []  # a follower handles nothing

    grant(cluster, namespace, leases=True)
    became_leader(process, timeout=30)
    wait_for_call(calls_file, obj='obj', handler='create')
    assert f"The Lease {namespace}/{LEASE} is usable again for leader election." in process.log
    assert 'Traceback' not in process.log


def put_lease(cluster: Cluster, namespace: str, spec: dict[str, Any], *, check: bool = True) -> Any:
    return cluster.kubectl('apply', '-n', namespace, '-f', '-', check=check, input=json.dumps({
        'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': {'name': LEASE}, 'spec': spec}))


def test_a_lease_held_with_a_renew_time_in_the_far_future_is_said_and_taken_over(
        cluster: Cluster, namespace: str, replicas: Replicas, calls_file: pathlib.Path) -> None:
    put_lease(cluster, namespace, {'holderIdentity': 'ghost', 'leaseDurationSeconds': 6,
                                   'renewTime': '2999-01-01T00:00:00.000000Z', 'leaseTransitions': 3})
    started_at = time.time()
    process = replicas.start('a')
    became_leader(process, timeout=60)
    assert time.time() - started_at >= LEASE_DURATION  # the ghost's lease ran out first, on our clock
    lines = [line for line in process.log.splitlines() if 'in the future' in line]
    assert len(lines) == 1
    assert (f"The Lease {namespace}/{LEASE} held by 'ghost' has a renewTime in the future "
            f"(2999-01-01T00:00:00.000000Z): the time in the Lease is ignored; it expires 6s after it last changed."
            ) in lines[0]
    spec = lease_spec(cluster, namespace)
    assert spec['leaseTransitions'] == 4 and spec['holderIdentity'] != 'ghost'
    create(cluster, namespace, 'obj')
    wait_for_call(calls_file, obj='obj', handler='create', pid=pid_of(process))


def test_a_strangers_lease_of_68_years_is_said_and_taken_over_after_4_lease_durations(
        cluster: Cluster, namespace: str, replicas: Replicas) -> None:
    put_lease(cluster, namespace, {'holderIdentity': 'stranger', 'leaseDurationSeconds': 2147483647})
    started_at = time.time()
    process = replicas.start('a')
    became_leader(process, timeout=90)
    assert time.time() - started_at >= 4 * LEASE_DURATION  # never renewed: 4 of our lease durations, not 68 years
    lines = [line for line in process.log.splitlines() if 'asks for leaseDurationSeconds' in line]
    assert len(lines) == 1
    assert (f"The Lease {namespace}/{LEASE} held by 'stranger' asks for leaseDurationSeconds=2147483647, "
            f"more than 4 times this replica's lease duration: it is judged by 24s since it last changed") in lines[0]
    assert lease_spec(cluster, namespace)['holderIdentity'] != 'stranger'


def test_a_lease_without_a_duration_is_said_and_judged_by_ours(
        cluster: Cluster, namespace: str, replicas: Replicas) -> None:
    put_lease(cluster, namespace, {'holderIdentity': 'ghost'})
    process = replicas.start('a')
    became_leader(process, timeout=60)
    lines = [line for line in process.log.splitlines() if 'no valid leaseDurationSeconds' in line]
    assert len(lines) == 1
    assert (f"The Lease {namespace}/{LEASE} held by 'ghost' has no valid leaseDurationSeconds (None): "
            f"it is judged by ours, 6s since it last changed.") in lines[0]


def test_a_negative_lease_duration_is_refused_by_the_api_server(cluster: Cluster, namespace: str) -> None:
    result = put_lease(cluster, namespace, {'holderIdentity': 'ghost', 'leaseDurationSeconds': -5}, check=False)
    assert result.returncode != 0
    assert 'spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0' in result.stderr


def test_the_documented_deployment_is_accepted_by_the_api_server(cluster: Cluster, namespace: str) -> None:
    text = (REPO_ROOT / 'docs' / 'scaling.md').read_text()
    manifest = next(block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if 'kind: Deployment' in block)
    assert 'replicas: 2' in manifest and 'coordination.k8s.io' in manifest
    manifest = manifest.replace('namespace: my-operator', f'namespace: {namespace}')
    result = cluster.kubectl('apply', '--dry-run=server', '-f', '-', input=manifest)
    assert result.stdout.count('(server dry run)') == 4, result.stdout
