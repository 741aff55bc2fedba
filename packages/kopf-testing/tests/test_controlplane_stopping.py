"""
What ``stop`` leaves in a state directory: the logs, and no credentials.

A state directory as a started control plane leaves it (the PKI, etcd's data,
the kubeconfigs, ``state.json``, the service accounts' kubeconfigs made by
``kubeconfig --service-account``, a temporary file of an interrupted write),
made of real files in tmp_path; no servers run, so nothing here needs the
control plane's binaries. The started control plane's own stop is checked by
``integration/test_controlplane.py``.
"""
import json
import pathlib

from kopf_testing.controlplane import ControlPlane
from kopf_testing.controlplane.__main__ import main

_TOKEN = 'a-bearer-token-of-the-service-account'


def _leave_a_started_state(root: pathlib.Path) -> None:
    for name in ['pki/ca.pem', 'pki/admin-key.pem', 'pki/tokens.csv', 'etcd/member/snap/db',
                 'logs/etcd.log', 'logs/kube-apiserver.log',
                 'admin.kubeconfig', 'admin-token.kubeconfig', 'user.kubeconfig',
                 'serviceaccount-default-operator.kubeconfig', 'serviceaccount-ns1-other.kubeconfig',
                 '.serviceaccount-ns1-third.kubeconfig.k2j3h4.tmp']:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        secret = 'a log line' if name.startswith('logs/') else json.dumps({'users': [{'user': {'token': _TOKEN}}]})
        path.write_text(secret)
    (root / 'state.json').write_text(json.dumps({
        'bin_dir': str(root / 'bin'), 'ports': {'etcd_client': 1, 'etcd_peer': 2, 'apiserver': 3,
                                                'controller_manager': 4},
        'pids': {}, 'admin_token': 'admin', 'user_token': 'user', 'feature_gates': {}}))


def _left(root: pathlib.Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob('*')}


def test_stop_leaves_only_the_logs(tmp_path: pathlib.Path) -> None:
    _leave_a_started_state(tmp_path)
    ControlPlane(tmp_path).stop()
    assert _left(tmp_path) == {'logs', 'logs/etcd.log', 'logs/kube-apiserver.log'}


def test_the_stop_command_leaves_no_token(tmp_path: pathlib.Path) -> None:
    _leave_a_started_state(tmp_path)
    assert main(['stop', '--state-dir', str(tmp_path)]) == 0
    assert _left(tmp_path) == {'logs', 'logs/etcd.log', 'logs/kube-apiserver.log'}
    assert [path for path in tmp_path.rglob('*') if path.is_file() and _TOKEN in path.read_text()] == []
