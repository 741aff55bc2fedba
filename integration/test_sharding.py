"""
Automatic sharding through a real API server: replicas split the objects, die, join — each object handled once.

Inputs: ``kopf run --shards=auto`` processes of ``operators_src/sharding.py`` (a
create handler per object, a daemon per labelled object, short Lease timings),
on the session's cluster (the ShardedListAndWatch gate off: the replicas filter
on their side) and on one with the gate on (the API server filters; skipped if
the pinned Kubernetes release does not know the gate or does not honour it).
Outputs: the calls file that the handlers append to (pid, replica, object, uid,
handler, time — never the logs for counts), the replicas' Leases as stored, and
the replicas' logs for their one-line messages. Nothing is mocked.

The scenario, in one test per cluster (the replicas' start-up is the slow part):
three replicas split the slots; the objects of a batch are each handled once, by
the replica whose slots hold the object's uid; one replica is killed with -9, and
its objects (old and new) are handled by the survivors within one lease duration;
a fourth replica joins and takes its share; no object is handled twice, and the
daemons of the moved objects never run in two processes at once.
"""
import itertools
import json
import os
import pathlib
import re
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest

from integration import kubeobjects
from integration.controlplane import NON_ADMIN_USER, Cluster, FeatureGates
from integration.operating import REPO_ROOT, OperatorProcess
from kopf._core.engines import membership, sharding

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'sharding.py')
GROUP, PLURAL, KIND = 'shard.kopf.dev', 'shardthings', 'ShardThing'
TIMINGS = {'LEASE_DURATION': '6', 'RENEW_DEADLINE': '4', 'RETRY_PERIOD': '1'}
LEASE_DURATION = float(TIMINGS['LEASE_DURATION'])
PREFIX = 'kopf-shard-default'
OBJECTS = int(os.environ.get('KOPF_SHARDING_OBJECTS', '600'))  # per the first batch; the later ones are smaller
DAEMONS = 12  # labelled objects of the first batch: their daemons move with their slots


def read_calls(path: pathlib.Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Replicas:
    """The operator processes of one test, each logging into its own file; all killed at the end."""

    def __init__(self, cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.tmp_path = tmp_path
        self.calls_file = tmp_path / 'calls.jsonl'
        self.calls_file.touch()
        self.started: dict[str, OperatorProcess] = {}

    def start(self, name: str, **env: str) -> OperatorProcess:
        env = {**TIMINGS, 'CALLS_FILE': str(self.calls_file), 'POD_ID': name,
               'KUBECONFIG': str(self.cluster.kubeconfig), **env}
        process = OperatorProcess([OPERATOR, '-n', self.namespace, '--verbose', '--standalone', '--shards=auto'],
                                  log_path=self.tmp_path / f'{name}.log', env=env)
        process.start()
        self.started[name] = process
        return process

    def kill(self, name: str) -> None:
        process = self.started[name].process
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for process in self.started.values():
            if process.process is not None and process.process.poll() is None:
                process.process.kill()
                process.process.wait()

    def leases(self) -> dict[str, dict[str, Any]]:
        """The live members' Leases by holder: their names and served slots."""
        listed = json.loads(self.cluster.kubectl('get', 'leases', '-n', self.namespace, '-o', 'json',
                                                 '-l', f'{membership.LABEL}={PREFIX}').stdout)
        return {lease['spec'].get('holderIdentity'): lease for lease in listed['items']
                if lease['spec'].get('holderIdentity')}

    def settled(self, replicas: list[str]) -> Optional[dict[str, frozenset[int]]]:
        """The slots of each replica, once every replica serves exactly its assigned share (else None)."""
        leases = self.leases()
        if set(leases) != set(replicas):
            return None
        names = {replica: leases[replica]['metadata']['name'] for replica in replicas}
        served = {replica: sharding.parse_slots(leases[replica]['metadata']['annotations'][membership.SERVING])
                  for replica in replicas}
        assigned = sharding.assign(names.values())
        return served if all(served[r] == assigned[names[r]] for r in replicas) else None

    def wait_settled(self, replicas: list[str], timeout: float = 90) -> dict[str, frozenset[int]]:
        return kubeobjects.poll(lambda: self.settled(replicas), timeout=timeout)


def create_batch(cluster: Cluster, namespace: str, prefix: str, count: int, daemons: int = 0) -> list[str]:
    """Many objects in one request (a List), as fast as the API server takes them."""
    names = [f'{prefix}-{index:04d}' for index in range(count)]
    items = [{'apiVersion': f'{GROUP}/v1', 'kind': KIND, 'spec': {},
              'metadata': {'name': name, 'labels': {'daemon': 'yes'} if index < daemons else {}}}
             for index, name in enumerate(names)]
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({'apiVersion': 'v1', 'kind': 'List',
                                                                              'items': items}))
    return names


def wait_created(calls_file: pathlib.Path, names: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """Every object's (first) create call, once all are there."""
    def done() -> Optional[dict[str, dict[str, Any]]]:
        created = {call['object']: call for call in read_calls(calls_file) if call['handler'] == 'create'}
        return created if all(name in created for name in names) else None
    return kubeobjects.poll(done, timeout=timeout)


def assert_handled_by_owners(calls: dict[str, dict[str, Any]], names: list[str],
                             slots: dict[str, frozenset[int]]) -> None:
    for name in names:
        call = calls[name]
        assert sharding.slot_of(call['uid']) in slots[call['replica']], (name, call['replica'])


def assert_each_created_once(calls_file: pathlib.Path) -> None:
    creates = [call['object'] for call in read_calls(calls_file) if call['handler'] == 'create']
    twice = {name for name in creates if creates.count(name) > 1}
    assert not twice, f"handled twice: {sorted(twice)[:10]}"


def assert_daemons_never_overlap(calls_file: pathlib.Path) -> dict[str, float]:
    """No two processes run an object's daemon at once; the longest gap of each object's heartbeats."""
    beats: dict[str, list[dict[str, Any]]] = {}
    for call in read_calls(calls_file):
        if call['handler'] in ('daemon', 'heartbeat', 'daemon-exit'):
            beats.setdefault(call['object'], []).append(call)
    gaps: dict[str, float] = {}
    for name, calls in beats.items():
        spans: dict[int, list[float]] = {}
        for call in calls:
            spans.setdefault(call['pid'], []).append(call['time'])
        ordered = sorted((min(times), max(times), pid) for pid, times in spans.items())
        for (_, end, pid), (start, _, other) in itertools.pairwise(ordered):
            assert start >= end, f"{name}: the daemon ran in {pid} and {other} at once"
        times = sorted(call['time'] for call in calls)
        gaps[name] = max((b - a for a, b in itertools.pairwise(times)), default=0.0)
    return gaps


@pytest.fixture(scope='module')
def gated(kopf_gated_cluster: Callable[[FeatureGates], Cluster]) -> Cluster:
    """A cluster whose API server filters by shard selectors; skipped where the release lacks the gate."""
    try:
        cluster = kopf_gated_cluster({'ShardedListAndWatch': True})
    except Exception as e:  # the servers refuse a gate unknown to their release at start
        pytest.skip(f"The local control plane cannot enable ShardedListAndWatch (its Kubernetes release "
                    f"lacks it; see controlplane/gomod/go.mod): {e}")
    kubeobjects.apply_crds(cluster, kubeobjects.crd_manifest(GROUP, PLURAL, KIND))
    return cluster


@pytest.fixture(params=['client-side', 'server-side'])
def target(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[tuple[Cluster, str, str]]:
    """The cluster (filtering client-side or server-side), the mode, and a new namespace in it."""
    chosen = cluster if request.param == 'client-side' else request.getfixturevalue('gated')
    kubeobjects.apply_crds(chosen, kubeobjects.crd_manifest(GROUP, PLURAL, KIND))
    name = f'test-shards-{os.urandom(4).hex()}'
    chosen.kubectl('create', 'namespace', name)
    if request.param == 'server-side':
        probe = json.loads(chosen.kubectl('get', '--raw', f'/apis/{GROUP}/v1/namespaces/{name}/{PLURAL}?shardSelector='
                                          + "shardRange(object.metadata.uid,'0x0000000000000000',"
                                            "'0x8000000000000000')").stdout)
        if 'shardInfo' not in probe.get('metadata', {}):
            pytest.skip("The API server with ShardedListAndWatch does not echo shardInfo: it does not shard.")
    yield chosen, request.param, name
    chosen.kubectl('delete', 'namespace', name, '--wait=false', '--ignore-not-found')


@pytest.fixture
def replicas(target: tuple[Cluster, str, str], tmp_path: pathlib.Path) -> Iterator[Replicas]:
    cluster, _, namespace = target
    made = Replicas(cluster, namespace, tmp_path)
    yield made
    made.stop_all()


def test_replicas_split_the_objects_survive_a_kill_and_a_join(
        replicas: Replicas, target: tuple[Cluster, str, str]) -> None:
    cluster, mode, _ = target
    for name in ('a', 'b', 'c'):
        replicas.start(name)
    slots = replicas.wait_settled(['a', 'b', 'c'])
    assert all(slots.values()) and sum(map(len, slots.values())) == sharding.SLOTS

    # Three replicas: every object handled once, by the replica whose slots hold its uid.
    started = time.monotonic()
    first = create_batch(cluster, replicas.namespace, 'first', OBJECTS, daemons=DAEMONS)
    calls = wait_created(replicas.calls_file, first, timeout=180)
    print(f"{mode}: {OBJECTS} objects handled by 3 replicas in {time.monotonic() - started:.1f}s")
    assert_handled_by_owners(calls, first, slots)
    assert {calls[name]['replica'] for name in first} == {'a', 'b', 'c'}

    # One killed with -9: its objects, old and new, handled by the others within one lease duration.
    replicas.kill('c')
    killed_at = time.time()
    second = create_batch(cluster, replicas.namespace, 'second', 60)
    calls = wait_created(replicas.calls_file, second, timeout=60)
    orphans = [name for name in second if sharding.slot_of(calls[name]['uid']) in slots['c']]
    assert orphans, "none of the new objects fell into the killed replica's slots"
    late = max(calls[name]['time'] for name in orphans) - killed_at
    assert late <= LEASE_DURATION + 4, f"the killed replica's objects were handled {late:.1f}s after the kill"
    slots = replicas.wait_settled(['a', 'b'])

    # A fourth replica joins: it takes its share; the others keep theirs; nothing is handled twice.
    replicas.start('d')
    slots = replicas.wait_settled(['a', 'b', 'd'])
    assert slots['d']
    third = create_batch(cluster, replicas.namespace, 'third', 60)
    calls = wait_created(replicas.calls_file, third, timeout=60)
    assert_handled_by_owners(calls, third, slots)
    time.sleep(2)  # the daemons of the moved objects beat a while in their new replicas
    assert_each_created_once(replicas.calls_file)
    gaps = assert_daemons_never_overlap(replicas.calls_file)
    assert len(gaps) == DAEMONS
    assert max(gaps.values()) <= LEASE_DURATION + 4, gaps  # never without an owner for longer


def test_a_lease_prefix_that_kubernetes_refuses_stops_the_start_with_one_message(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    replicas = Replicas(cluster, namespace, tmp_path)
    try:
        process = replicas.start('a', LEASE_PREFIX='Bad_Name!')
        assert process.process is not None
        assert process.process.wait(timeout=60) != 0
        errors = [line for line in process.log.splitlines() if "Lease prefix" in line]
        assert len(errors) == 1
        assert "The sharding's Lease prefix 'Bad_Name!' is not valid in Kubernetes" in errors[0]
    finally:
        replicas.stop_all()


def test_the_documented_sharded_deployment_is_accepted_by_the_api_server(cluster: Cluster, namespace: str) -> None:
    text = (REPO_ROOT / 'docs' / 'scaling.md').read_text()
    section = text[text.index('## Automatic sharding'):]
    manifest = next(block for block in re.findall(r"```yaml\n(.*?)```", section, re.S) if 'kind: Deployment' in block)
    assert 'replicas: 3' in manifest and '--shards=auto' in manifest and 'coordination.k8s.io' in manifest
    manifest = manifest.replace('namespace: my-operator', f'namespace: {namespace}')
    result = cluster.kubectl('apply', '--dry-run=server', '-f', '-', input=manifest)
    assert result.stdout.count('(server dry run)') == 4, result.stdout


def grant(cluster: Cluster, namespace: str, *, leases: bool) -> None:
    rules = [{'apiGroups': [GROUP], 'resources': [PLURAL], 'verbs': ['get', 'list', 'watch', 'patch']},
             {'apiGroups': [''], 'resources': ['events'], 'verbs': ['create']}]
    if leases:
        rules.append({'apiGroups': ['coordination.k8s.io'], 'resources': ['leases'],
                      'verbs': ['get', 'list', 'create', 'patch', 'delete']})
    cluster.kubectl('apply', '-f', '-', input=json.dumps({
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
        'metadata': {'name': 'operator', 'namespace': namespace}, 'rules': rules}))


def served_by(replicas: Replicas, replica: str) -> frozenset[int]:
    lease = replicas.leases().get(replica)
    return frozenset() if lease is None else sharding.parse_slots(
        lease['metadata']['annotations'][membership.SERVING])


def test_leases_forbidden_stop_the_replica_until_granted_again(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.skip("This test runs a replica as the local control plane's non-admin user (--kopf-cluster=local).")
    kubeobjects.apply_crds(cluster, kubeobjects.crd_manifest(GROUP, PLURAL, KIND))
    grant(cluster, namespace, leases=True)
    cluster.kubectl('create', 'rolebinding', 'operator', '-n', namespace, '--role=operator',
                    f'--user={NON_ADMIN_USER}')
    replicas = Replicas(cluster, namespace, tmp_path)
    try:
        restricted = replicas.start('x', KUBECONFIG=str(cluster.control_plane.user_kubeconfig))
        replicas.start('y')
        replicas.wait_settled(['x', 'y'])

        grant(cluster, namespace, leases=False)
        restricted.wait_for(r"stopping serving all slots", timeout=30)
        restricted.wait_for(r"Serving the slots none of 64", timeout=30)
        kubeobjects.poll(lambda: served_by(replicas, 'y') == sharding.ALL_SLOTS or None, timeout=30)
        names = create_batch(cluster, namespace, 'while-forbidden', 40)
        calls = wait_created(replicas.calls_file, names, timeout=60)
        assert {calls[name]['replica'] for name in names} == {'y'}
        errors = [line for line in restricted.log.splitlines() if '[ERROR' in line]
        assert len(errors) == 1, errors
        assert "Not permitted to use the sharding's Leases in" in errors[0]
        assert "Grant the operator get, list, create, patch and delete on the leases" in errors[0]

        grant(cluster, namespace, leases=True)
        restricted.wait_for(r"The sharding's Leases in .* are usable again\.", timeout=30)
        replicas.wait_settled(['x', 'y'])
        assert_each_created_once(replicas.calls_file)
    finally:
        replicas.stop_all()
