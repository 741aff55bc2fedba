"""
Authentication against a real API server: kubeconfigs, login handlers, re-login.

Inputs: the local control plane's credentials (an admin client certificate, an
admin bearer token), an operator run by ``kopf run`` in its own process.
Outputs: whether the operator handles objects, and its authentication log.
The API server itself decides which credentials are valid: nothing is faked.
"""
import base64
import json
import pathlib
from collections.abc import Iterator

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess
from kopf_testing._polling import DEFAULT_TIMEOUT, patient

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')
ROTATING = str(pathlib.Path(__file__).parent / 'operators_src' / 'rotating_login.py')


pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture
def ca_path(cluster: Cluster, tmp_path: pathlib.Path) -> pathlib.Path:
    config = json.loads(cluster.kubectl('config', 'view', '--raw', '-o', 'json').stdout)
    path = tmp_path / 'ca.pem'
    path.write_bytes(base64.b64decode(config['clusters'][0]['cluster']['certificate-authority-data']))
    return path


@pytest.fixture
def token_path(cluster: Cluster, tmp_path: pathlib.Path) -> pathlib.Path:
    if cluster.control_plane is None:
        pytest.skip("Needs the local control plane's static tokens (not available on other clusters).")
    path = tmp_path / 'token'
    path.write_text(cluster.admin_token)
    return path


@pytest.fixture
def rotating_operator(cluster: Cluster, namespace: str, tmp_path: pathlib.Path,
                      ca_path: pathlib.Path, token_path: pathlib.Path) -> Iterator[OperatorProcess]:
    env = {'TEST_SERVER': cluster.server, 'TEST_CA_PATH': str(ca_path), 'TEST_TOKEN_PATH': str(token_path)}
    process = OperatorProcess([ROTATING, '--verbose', '-n', namespace], log_path=tmp_path / 'operator.log', env=env)
    yield process
    process.stop()


def create_object(cluster: Cluster, namespace: str, name: str = 'kopf-example-1') -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': name}, 'spec': {}}))


def status_of(cluster: Cluster, namespace: str, name: str = 'kopf-example-1') -> dict:  # type: ignore[type-arg]
    result = cluster.kubectl('get', '-n', namespace, 'kopfexample', name, '-o', 'json')
    return json.loads(result.stdout).get('status', {})  # type: ignore[no-any-return]


def test_kubeconfig_with_a_bearer_token(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.skip("Needs the local control plane's token kubeconfig (not available on other clusters).")
    env = {'KUBECONFIG': str(cluster.control_plane.token_kubeconfig)}
    with OperatorProcess([EXAMPLE, '--verbose', '-n', namespace], log_path=tmp_path / 'op.log', env=env) as op:
        create_object(cluster, namespace)
        op.wait_for(r"Handler 'create_fn' succeeded\.")
        assert "Client is configured via kubeconfig file." in op.log
    assert status_of(cluster, namespace)['create_fn'] == {'message': 'hello world'}


def test_kubeconfig_with_a_client_certificate(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.skip("Needs the local control plane's certificate kubeconfig (not available on other clusters).")
    env = {'KUBECONFIG': str(cluster.control_plane.kubeconfig)}
    with OperatorProcess([EXAMPLE, '--verbose', '-n', namespace], log_path=tmp_path / 'op.log', env=env) as op:
        create_object(cluster, namespace)
        op.wait_for(r"Handler 'create_fn' succeeded\.")
    assert status_of(cluster, namespace)['create_fn'] == {'message': 'hello world'}


def test_expiring_credentials_are_renewed_by_the_login_handler(
        cluster: Cluster, namespace: str, rotating_operator: OperatorProcess) -> None:
    rotating_operator.env['TEST_TOKEN_TTL'] = '3'
    rotating_operator.start()
    rotating_operator.wait_for(r"Initial authentication has finished\.")
    rotating_operator.wait_for(r"Re-authentication has finished\.", timeout=30)
    create_object(cluster, namespace)
    log = rotating_operator.wait_for(r"Handler 'create_fn' succeeded\.")
    assert "Login #2 with the token" in log
    assert status_of(cluster, namespace)['create_fn'] == {'message': 'created'}


def test_rejected_credentials_are_replaced_after_a_401(
        cluster: Cluster, namespace: str, rotating_operator: OperatorProcess) -> None:
    rotating_operator.env['TEST_FIRST_TOKEN'] = 'not-a-valid-token'
    rotating_operator.start()
    create_object(cluster, namespace)
    log = rotating_operator.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    assert "Login #1 with the token ending in ...oken" in log
    assert "Re-authentication has been initiated." in log
    assert status_of(cluster, namespace)['create_fn'] == {'message': 'created'}


def test_no_credentials_at_all_fail_with_one_clear_message(namespace: str, tmp_path: pathlib.Path) -> None:
    env = {'KUBECONFIG': str(tmp_path / 'absent-kubeconfig'), 'HOME': str(tmp_path)}
    op = OperatorProcess([EXAMPLE, '-n', namespace], log_path=tmp_path / 'op.log', env=env)
    op.start()
    assert op.process is not None
    exit_code = op.process.wait(timeout=patient(DEFAULT_TIMEOUT))
    assert exit_code != 0
    assert 'absent-kubeconfig' in op.log
    assert 'Traceback' not in op.log
