"""
Kubeconfigs of service accounts, from the control-plane tool: only the permissions bound to them.

Inputs: a service account's kubeconfig made by ``Cluster.service_account_kubeconfig``
(and by ``python -m kopf_testing.controlplane kubeconfig`` from the session's
state directory, if the session runs the local control plane), and a Role
bound to it. Outputs: who the API server says the user is, and what it may do.
"""
import json
import pathlib
import subprocess
import sys

from integration.controlplane import Cluster


def whoami(cluster: Cluster, kubeconfig: pathlib.Path) -> str:
    review = json.loads(cluster.kubectl('auth', 'whoami', '-o', 'json', kubeconfig=kubeconfig).stdout)
    return review['status']['userInfo']['username']  # type: ignore[no-any-return]


def can_i(cluster: Cluster, kubeconfig: pathlib.Path, *args: str) -> str:
    return cluster.kubectl('auth', 'can-i', *args, kubeconfig=kubeconfig, check=False).stdout.strip()


def test_a_service_account_has_only_the_permissions_bound_to_it(cluster: Cluster, namespace: str) -> None:
    kubeconfig = cluster.service_account_kubeconfig(namespace, 'operator')
    assert kubeconfig.stat().st_mode & 0o077 == 0  # it holds a token
    assert whoami(cluster, kubeconfig) == f'system:serviceaccount:{namespace}:operator'
    assert can_i(cluster, kubeconfig, 'list', 'configmaps') == 'no'
    cluster.kubectl('create', 'role', 'reader', '-n', namespace, '--verb=list', '--resource=configmaps')
    cluster.kubectl('create', 'rolebinding', 'reader', '-n', namespace, '--role=reader',
                    f'--serviceaccount={namespace}:operator')
    assert can_i(cluster, kubeconfig, 'list', 'configmaps') == 'yes'  # its namespace is the context's default
    assert can_i(cluster, kubeconfig, 'list', 'configmaps', '--all-namespaces') == 'no'


def test_the_command_line_makes_one_from_a_running_control_plane(cluster: Cluster, namespace: str) -> None:
    if cluster.control_plane is None:  # another kind of cluster: the tool's state is not there; use the API
        kubeconfig = cluster.service_account_kubeconfig(namespace, 'cli')
    else:
        result = subprocess.run([sys.executable, '-m', 'kopf_testing.controlplane', 'kubeconfig',
                                 '--service-account', f'{namespace}/cli',
                                 '--state-dir', str(cluster.control_plane.root_dir)],
                                capture_output=True, text=True, check=True)
        kubeconfig = pathlib.Path(result.stdout.strip())
    assert whoami(cluster, kubeconfig) == f'system:serviceaccount:{namespace}:cli'


def test_a_malformed_service_account_is_refused_with_a_message() -> None:
    result = subprocess.run([sys.executable, '-m', 'kopf_testing.controlplane', 'kubeconfig',
                             '--service-account', 'no-slash'], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr == "Error: --service-account must be NAMESPACE/NAME, not 'no-slash'.\n"
