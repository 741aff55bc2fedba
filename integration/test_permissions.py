"""
An operator whose service account may not list the served resource.

Inputs: a ServiceAccount with a Role that allows everything the 01-minimal
operator needs except ``list`` (or ``watch``) on kopfexamples, a kubeconfig with
its token (issued by the API server's TokenRequest API), an object created by
the admin while the permission is missing.
Outputs: the operator's log (a clear error naming the verb and the resource,
at once), and, after the Role is extended at run time, the object handled
without a restart. The API server's RBAC decides everything: nothing is faked.
"""
import json
import pathlib

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import create_object, wait_for_object
from integration.operating import EXAMPLES, OperatorProcess

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')
OBJECT = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'kopf-example-1'}, 'spec': {}}


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    cluster.kubectl('apply', '-f', str(EXAMPLES / 'crd.yaml'))
    cluster.kubectl('wait', '--for=condition=established', '--timeout=60s', 'crd/kopfexamples.kopf.dev')


def role(namespace: str, verbs: list[str]) -> str:
    return json.dumps({
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
        'metadata': {'namespace': namespace, 'name': 'operator'},
        'rules': [
            {'apiGroups': ['kopf.dev'], 'resources': ['kopfexamples', 'kopfexamples/status'], 'verbs': verbs},
            {'apiGroups': [''], 'resources': ['events'], 'verbs': ['create']},
        ],
    })


def restricted_kubeconfig(cluster: Cluster, namespace: str, tmp_path: pathlib.Path, verbs: list[str],
                          ) -> pathlib.Path:
    """A kubeconfig of a service account with only these verbs on kopfexamples."""
    cluster.kubectl('create', 'serviceaccount', 'operator', '-n', namespace)
    cluster.kubectl('apply', '-f', '-', input=role(namespace, verbs))
    cluster.kubectl('create', 'rolebinding', 'operator', '-n', namespace,
                    '--role=operator', f'--serviceaccount={namespace}:operator')
    token = cluster.kubectl('create', 'token', 'operator', '-n', namespace, '--duration=1h').stdout.strip()
    admin = json.loads(cluster.kubectl('config', 'view', '--raw', '--minify', '-o', 'json').stdout)
    path = tmp_path / 'restricted.kubeconfig'
    path.write_text(json.dumps({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'restricted',
        'clusters': admin['clusters'],
        'users': [{'name': 'operator', 'user': {'token': token}}],
        'contexts': [{'name': 'restricted', 'context': {'cluster': admin['clusters'][0]['name'],
                                                        'user': 'operator', 'namespace': namespace}}],
    }))
    return path


@pytest.mark.parametrize('missing', ['list', 'watch'])
def test_missing_permission_is_logged_and_recovered_at_run_time(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, missing: str,
) -> None:
    all_verbs = ['get', 'list', 'watch', 'patch']
    kubeconfig = restricted_kubeconfig(cluster, namespace, tmp_path, [v for v in all_verbs if v != missing])
    args = [EXAMPLE, '--standalone', '--verbose', '-n', namespace]
    with OperatorProcess(args, log_path=tmp_path / 'operator.log', env={'KUBECONFIG': str(kubeconfig)}) as operator:
        operator.wait_for(rf"ERROR.*The operator is forbidden to {missing} kopfexamples\.kopf\.dev "
                          rf"in namespace '{namespace}'; retrying in 1s", timeout=60)
        create_object(cluster, namespace, OBJECT)
        operator.wait_for(rf"forbidden to {missing} kopfexamples\.kopf\.dev.*retrying in 2s", timeout=60)
        assert "Handler 'create_fn'" not in operator.log

        cluster.kubectl('apply', '-f', '-', input=role(namespace, all_verbs))
        operator.wait_for(rf"The operator is permitted to {missing} kopfexamples\.kopf\.dev", timeout=90)
        operator.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    body = wait_for_object(cluster, namespace, 'kopfexamples', 'kopf-example-1',
                           lambda obj: 'create_fn' in obj.get('status', {}))
    assert body['status']['create_fn'] == {'message': 'hello world'}
