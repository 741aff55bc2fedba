"""
Peering of operators through a real API server: keep-alives, freezing, resuming.

Inputs: the peering CRDs (``examples/peering.yaml``), a KopfPeering object in
the test's namespace, the 01-minimal operator, and the ``kopf freeze`` /
``kopf resume`` commands. Outputs: the peering object's status entries, the
operator's log, and whether objects are handled while frozen.
"""
import json
import subprocess
from collections.abc import Callable

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_peering_crds, create_peering
from integration.operating import EXAMPLES, OperatorProcess, kopf_executable

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')


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
