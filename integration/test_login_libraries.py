"""
Login with several client libraries installed: pykube-ng and kubernetes both log in.

Inputs: a kubeconfig whose user gets its token from an ``exec`` plugin (as with
cloud providers); the plugin gives a token that the API server rejects to
pykube-ng and a valid one to the official client (which it tells apart by the
``KUBERNETES_EXEC_INFO`` variable that only the official client sets). An
operator without login handlers of its own. Outputs: its log, and whether it
handles objects: pykube-ng's credentials (the highest priority) are tried
first, rejected with 401, and then the official client's are used.
"""
import json
import pathlib
import sys

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')

EXEC_PLUGIN = '''
import json, os, sys
valid = 'KUBERNETES_EXEC_INFO' in os.environ  # set by the official client only, not by pykube-ng
token = open(os.environ['TEST_TOKEN_PATH']).read().strip() if valid else 'rejected-token'
json.dump({'apiVersion': 'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential',
           'status': {'token': token}}, sys.stdout)
'''


pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture
def exec_kubeconfig(cluster: Cluster, tmp_path: pathlib.Path) -> pathlib.Path:
    if cluster.control_plane is None:
        pytest.skip("Needs the local control plane's static tokens (not available on other clusters).")
    config = json.loads(cluster.kubectl('config', 'view', '--raw', '-o', 'json').stdout)
    ca_data = config['clusters'][0]['cluster']['certificate-authority-data']
    (tmp_path / 'token').write_text(cluster.admin_token)
    plugin = tmp_path / 'exec_plugin.py'
    plugin.write_text(EXEC_PLUGIN)
    path = tmp_path / 'exec.kubeconfig'
    path.write_text(json.dumps({  # JSON is YAML too
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'exec',
        'clusters': [{'name': 'local', 'cluster': {'server': cluster.server, 'certificate-authority-data': ca_data}}],
        'users': [{'name': 'exec', 'user': {'exec': {
            'apiVersion': 'client.authentication.k8s.io/v1beta1', 'command': sys.executable,
            'args': [str(plugin)], 'env': [{'name': 'TEST_TOKEN_PATH', 'value': str(tmp_path / 'token')}],
            'interactiveMode': 'Never'}}}],
        'contexts': [{'name': 'exec', 'context': {'cluster': 'local', 'user': 'exec'}}],
    }))
    return path


def test_the_next_library_is_used_when_the_first_ones_credentials_are_rejected(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, exec_kubeconfig: pathlib.Path) -> None:
    env = {'KUBECONFIG': str(exec_kubeconfig)}
    with OperatorProcess([EXAMPLE, '--verbose', '-n', namespace], log_path=tmp_path / 'op.log', env=env) as op:
        op.wait_for(r"Initial authentication has finished\.")
        cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
            'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'obj'}, 'spec': {}}))
        log = op.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    # Both libraries' default login handlers ran and contributed their credentials.
    assert "Activity 'login_via_pykube' succeeded." in log
    assert "Activity 'login_via_client' succeeded." in log
    assert "Pykube is configured via kubeconfig file." in log
    assert "Client is configured via kubeconfig file." in log
    # pykube's were tried first and rejected, so the client's were used, with no re-login needed.
    assert "is unauthorized; invalidating the credentials" in log
    assert "Re-authentication has been initiated." not in log
    result = cluster.kubectl('get', '-n', namespace, 'kopfexample', 'obj', '-o', 'json')
    assert json.loads(result.stdout)['status']['create_fn'] == {'message': 'hello world'}
