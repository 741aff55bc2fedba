"""
RBAC taken away and given back while the operator runs: a clear line, retries, recovery without a restart.

Inputs: the ``bad_inputs.py`` operator running as the non-admin ``user`` of the
local control plane, whose Role in the test's namespace first allows patching
the objects, then not (while an object waits to be handled), then again.
Outputs: the operator's log (one line per retry naming the verb and the
resource, no traceback) and the objects as stored (handled once patching is
allowed again).
"""
import json
import pathlib
from collections.abc import Iterator

import pytest

from integration import kubeobjects
from integration.controlplane import NON_ADMIN_USER, Cluster
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'bad_inputs.py')
GROUP, PLURAL, KIND = 'bad.kopf.dev', 'badinputs', 'BadInput'
READ = ['get', 'list', 'watch']


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    kubeobjects.apply_crds(cluster, kubeobjects.crd_manifest(GROUP, PLURAL, KIND))


def grant(cluster: Cluster, namespace: str, verbs: list[str]) -> None:
    cluster.kubectl('apply', '-f', '-', input=json.dumps({
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
        'metadata': {'name': 'operator', 'namespace': namespace},
        'rules': [{'apiGroups': [GROUP], 'resources': [PLURAL, f'{PLURAL}/status'], 'verbs': verbs},
                  {'apiGroups': [''], 'resources': ['events'], 'verbs': ['create']}]}))


@pytest.fixture
def operator(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> Iterator[OperatorProcess]:
    if cluster.control_plane is None:
        pytest.fail("This test runs the operator as the local control plane's non-admin user (--cluster=local).")
    grant(cluster, namespace, [*READ, 'patch'])
    cluster.kubectl('create', 'rolebinding', 'operator', '-n', namespace, '--role=operator', f'--user={NON_ADMIN_USER}')
    process = OperatorProcess([OPERATOR, '-n', namespace, '--verbose', '--standalone'],
                              log_path=tmp_path / 'operator.log',
                              env={'KUBECONFIG': str(cluster.control_plane.user_kubeconfig)})
    process.start()
    process.wait_for(r"Starting the watch-stream for badinputs", timeout=60)
    yield process
    process.stop()


def create(cluster: Cluster, namespace: str, name: str) -> None:
    kubeobjects.create_object(cluster, namespace, {
        'apiVersion': f'{GROUP}/v1', 'kind': KIND, 'metadata': {'name': name, 'labels': {'mode': 'plain'}},
        'spec': {}})


def wait_handled(cluster: Cluster, namespace: str, name: str, timeout: float = 90) -> None:
    kubeobjects.wait_for_object(cluster, namespace, PLURAL, name,
                                lambda o: kubeobjects.DIFFBASE in o['metadata'].get('annotations', {}),
                                timeout=timeout)


def test_patching_forbidden_then_allowed_again_is_reported_retried_and_recovered(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'before')
    wait_handled(cluster, namespace, 'before')

    grant(cluster, namespace, READ)
    create(cluster, namespace, 'during')
    operator.wait_for(r"Not permitted while processing .*: .*cannot patch resource \"badinputs\" .*"
                      r"Grant the operator this permission; retrying in", timeout=60)

    grant(cluster, namespace, [*READ, 'patch'])
    wait_handled(cluster, namespace, 'during')
    create(cluster, namespace, 'after')
    wait_handled(cluster, namespace, 'after')

    log = operator.log
    assert 'Traceback' not in log
    assert sum('plain_fn handled before' in line for line in log.splitlines()) == 1
    assert sum('plain_fn handled after' in line for line in log.splitlines()) == 1
