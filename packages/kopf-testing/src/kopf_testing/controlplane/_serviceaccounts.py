"""
Kubeconfigs of service accounts: to test an operator with the permissions it will really have.

The admin kubeconfig can do anything, so RBAC mistakes (a missing verb, a
cluster-wide list with only a namespaced Role) pass unnoticed with it. A
service account's kubeconfig carries a bound token from the TokenRequest API
and nothing else: it can do exactly what its (Cluster)RoleBindings allow.
It works with any cluster kind: the server and its CA are the admin's.
"""
import json
import pathlib
import subprocess
from typing import Optional, Protocol

from . import _files


class _Kubectl(Protocol):
    kubeconfig: pathlib.Path

    def kubectl(self, *args: str, input: Optional[str] = None, check: bool = True,
                kubeconfig: Optional[pathlib.Path] = None) -> 'subprocess.CompletedProcess[str]': ...


def write_service_account_kubeconfig(cluster: _Kubectl, namespace: str, name: str, *,
                                     path: Optional[pathlib.Path] = None, duration: str = '1h') -> pathlib.Path:
    """Create the service account if absent, issue a token for it, write its kubeconfig; return the path."""
    cluster.kubectl('apply', '-f', '-', input=json.dumps({
        'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': {'name': name, 'namespace': namespace}}))
    token = cluster.kubectl('create', 'token', name, '-n', namespace, f'--duration={duration}').stdout.strip()
    config = json.loads(cluster.kubectl('config', 'view', '--raw', '--minify', '-o', 'json').stdout)
    user = f'system:serviceaccount:{namespace}:{name}'
    config['users'] = [{'name': user, 'user': {'token': token}}]
    context = config['contexts'][0]
    context['name'] = config['current-context'] = f'{user}@{context["context"]["cluster"]}'
    context['context'].update(user=user, namespace=namespace)
    path = path or cluster.kubeconfig.parent / f'serviceaccount-{namespace}-{name}.kubeconfig'
    _files.write_private_file(path, json.dumps(config, indent=2) + '\n')  # it holds a token
    return path
