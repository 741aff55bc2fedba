"""
Peering of operators through a real API server: keep-alives, freezing, resuming.

Inputs: the peering CRDs (``examples/peering.yaml``), a KopfPeering object in
the test's namespace, the 01-minimal operator, and the ``kopf freeze`` /
``kopf resume`` commands. Outputs: the peering object's status entries, the
operator's log, and whether objects are handled while frozen.
"""
import json
import pathlib
import re
import subprocess
from collections.abc import Callable

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_peering_crds, create_peering
from integration.operating import EXAMPLES, OperatorProcess, kopf_executable
from kopf._cogs.structs import shards
from kopf_testing import poll

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')
SHARDED = str(pathlib.Path(__file__).parent / 'operators_src' / 'watching_parity.py')
LOWER_HALF = shards.format_range('object.metadata.uid', 0, 1 << 63)
UPPER_HALF = shards.format_range('object.metadata.uid', 1 << 63, 1 << 64)


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_peering_crds(cluster, EXAMPLES)


@pytest.fixture
def peering(cluster: Cluster, namespace: str) -> str:
    return create_peering(cluster, namespace, 'default')


@pytest.fixture
def operator(operator_process: Callable[..., OperatorProcess]) -> OperatorProcess:
    return operator_process(EXAMPLE, '--verbose', start=False)


def kopf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([kopf_executable(), *args], capture_output=True, text=True, check=True, timeout=60)


def create_object(cluster: Cluster, namespace: str, name: str) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': name}, 'spec': {}}))


def test_keepalive_is_written_into_the_peering_object(
        cluster: Cluster, namespace: str, peering: str, operator: OperatorProcess) -> None:
    operator.start()
    operator.wait_for(rf"Keep-alive in 'default' in '{namespace}': ok\.")
    status = json.loads(cluster.kubectl('get', '-n', namespace, 'kopfpeering', peering, '-o', 'json').stdout)['status']
    (identity, entry), = status.items()
    assert entry['priority'] == 0 and entry['lifetime'] == 60 and entry['lastseen']
    operator.stop()
    status = json.loads(cluster.kubectl('get', '-n', namespace, 'kopfpeering', peering, '-o', 'json').stdout)
    assert identity not in status.get('status', {})  # removed on exit


def test_freezing_pauses_the_operator_and_resuming_continues(
        cluster: Cluster, namespace: str, peering: str, operator: OperatorProcess) -> None:
    operator.start()
    operator.wait_for(rf"Keep-alive in 'default' in '{namespace}': ok\.")
    kopf('freeze', '-n', namespace, '--peering', 'default', '--lifetime', '60', '--id', 'freezer')
    operator.wait_for(r"Pausing operations in favour of \[<Peer freezer: priority=100")
    create_object(cluster, namespace, 'while-frozen')
    operator.wait_for(r"Stopping the watch-stream for kopfexamples\.v1\.kopf\.dev")

    kopf('resume', '-n', namespace, '--peering', 'default', '--id', 'freezer')
    operator.wait_for(r"Resuming operations after the pause\.")
    log = operator.wait_for(r"\[.*/while-frozen\] Handler 'create_fn' succeeded\.")
    paused_at = log.index("Pausing operations")
    assert log.index(f"[{namespace}/while-frozen]") > log.index("Resuming operations", paused_at)


def test_no_peering_object_means_the_standalone_mode(
        namespace: str, operator: OperatorProcess) -> None:
    operator.start()
    operator.wait_for(r"Default peering object is not found, falling back to the standalone mode\.")


def test_operators_of_the_same_priority_with_shard_selectors_keep_working(
        cluster: Cluster, namespace: str, peering: str, operator_process: Callable[..., OperatorProcess]) -> None:
    """As in Kopf 1.45.2: with shard selectors set, same-priority peers are the other shards, not a conflict."""
    names = [f'obj-{index}' for index in range(6)]
    for name in names:
        create_object(cluster, namespace, name)
    operators = [operator_process(SHARDED, '--verbose', env={'PARITY_SHARD_SELECTOR': selector},
                                  log_name=f'shard-{index}.log')
                 for index, selector in enumerate([LOWER_HALF, UPPER_HALF])]
    for operator in operators:
        operator.wait_for(r"Keep-alive in ", timeout=60)
    create_object(cluster, namespace, 'late')  # handled only if its shard's operator is not paused
    poll(lambda: sorted(handled(operators)) == sorted([*names, 'late']), timeout=60, interval=0.5)
    assert all(len(re.findall(r"Keep-alive in ", operator.log)) >= 1 for operator in operators)
    assert not any(re.search(r"Pausing|conflicting", operator.log) for operator in operators)
    assert sorted(handled(operators)) == sorted([*names, 'late'])  # each object exactly once


def handled(operators: list[OperatorProcess]) -> list[str]:
    return [name for operator in operators for name in re.findall(r"Handled (\S+)\.$", operator.log, re.MULTILINE)]
