"""
The modes of what the control plane writes: files 0600 and directories 0700, even where they existed.

Real files in tmp_path, real subprocesses (``sh``), and fake ``k3d``, ``docker``
and ``kubectl`` scripts on PATH: nothing here needs the control plane's binaries.
The started control plane's whole state directory is checked by
``integration/test_controlplane.py``.
"""
import json
import os
import pathlib
import stat
import subprocess
import time
from collections.abc import Iterator

import pytest

from kopf_testing.controlplane import BINARIES_ENV_VAR, ControlPlane, ControlPlaneError, run_k3d_cluster
from kopf_testing.controlplane._files import make_private_dir, open_private_log, write_private_file
from kopf_testing.controlplane._processes import Process
from kopf_testing.controlplane._serviceaccounts import write_service_account_kubeconfig


def _mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """The most permissive umask: what the code does not restrict itself, others can read."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures('loose_umask')
def test_a_new_file_is_written_0600(tmp_path: pathlib.Path) -> None:
    write_private_file(tmp_path / 'secret', 'data')
    assert _mode(tmp_path / 'secret') == 0o600
    assert (tmp_path / 'secret').read_text() == 'data'


def test_an_existing_open_file_is_replaced_by_a_0600_one(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'secret'
    path.write_text('old')
    path.chmod(0o644)
    write_private_file(path, b'new')
    assert _mode(path) == 0o600
    assert path.read_bytes() == b'new'


def test_writing_leaves_no_temporary_file_behind(tmp_path: pathlib.Path) -> None:
    write_private_file(tmp_path / 'secret', 'data')
    write_private_file(tmp_path / 'secret', 'more data')
    assert [path.name for path in tmp_path.iterdir()] == ['secret']


@pytest.mark.usefixtures('loose_umask')
def test_directories_are_made_0700_with_an_existing_one_tightened(tmp_path: pathlib.Path) -> None:
    (tmp_path / 'existing').mkdir(mode=0o755)
    make_private_dir(tmp_path / 'existing')
    make_private_dir(tmp_path / 'new')
    assert _mode(tmp_path / 'existing') == 0o700
    assert _mode(tmp_path / 'new') == 0o700


def test_a_symlinked_state_directory_is_refused_and_its_target_left_alone(tmp_path: pathlib.Path) -> None:
    # E.g. /tmp/kopf-controlplane-UID planted by another user before the first start.
    target = tmp_path / 'elsewhere'
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (target / 'state.json').write_text('{}')
    (tmp_path / 'root').symlink_to(target)
    with pytest.raises(ControlPlaneError, match='not a directory owned by this user'):
        ControlPlane(tmp_path / 'root', bin_dir=tmp_path / 'no-binaries').start()
    assert _mode(target) == 0o755
    assert [path.name for path in target.iterdir()] == ['state.json']


@pytest.mark.usefixtures('loose_umask')
def test_an_existing_log_is_tightened_and_appended_to(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'server.log'
    path.write_text('before\n')
    path.chmod(0o644)
    with open(open_private_log(path), 'a') as log:
        log.write('after\n')
    assert _mode(path) == 0o600
    assert path.read_text() == 'before\nafter\n'


@pytest.mark.usefixtures('loose_umask')
def test_a_server_process_writes_its_own_files_for_its_owner_only(tmp_path: pathlib.Path) -> None:
    # E.g. the controller manager's self-signed serving certificate in --cert-dir (0644 by its own choice).
    script = f'echo written > {tmp_path / "file"}; mkdir {tmp_path / "dir"}'
    process = Process.spawn('writer', ['sh', '-c', script], log_path=tmp_path / 'logs' / 'writer.log')
    deadline = time.monotonic() + 10
    while process.is_running() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.exit_code == 0
    assert _mode(tmp_path / 'file') == 0o600
    assert _mode(tmp_path / 'dir') == 0o700
    assert _mode(tmp_path / 'logs') == 0o700
    assert _mode(tmp_path / 'logs' / 'writer.log') == 0o600


class _FakeCluster:
    """Just enough of ``Cluster`` for a service account's kubeconfig: canned kubectl answers."""

    def __init__(self, kubeconfig: pathlib.Path) -> None:
        self.kubeconfig = kubeconfig

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                kubeconfig: pathlib.Path | None = None) -> 'subprocess.CompletedProcess[str]':
        if args[:2] == ('create', 'token'):
            return subprocess.CompletedProcess(args, 0, 'the-token\n', '')
        if args[:2] == ('config', 'view'):
            config = {'clusters': [{'name': 'c', 'cluster': {'server': 'https://127.0.0.1:1'}}],
                      'contexts': [{'name': 'x', 'context': {'cluster': 'c', 'user': 'u'}}],
                      'current-context': 'x', 'users': []}
            return subprocess.CompletedProcess(args, 0, json.dumps(config), '')
        return subprocess.CompletedProcess(args, 0, '', '')


def test_an_existing_service_account_kubeconfig_is_tightened(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'serviceaccount-default-operator.kubeconfig'
    path.write_text('{}')
    path.chmod(0o644)
    written = write_service_account_kubeconfig(_FakeCluster(tmp_path / 'admin.kubeconfig'), 'default', 'operator')
    assert written == path
    assert _mode(path) == 0o600
    assert json.loads(path.read_text())['users'][0]['user'] == {'token': 'the-token'}


_FAKE_TOOL = '''#!/bin/sh
case "$1 $2" in
  "kubeconfig get") echo "apiVersion: v1  # the k3d cluster's admin credentials" ;;
  "config view") echo "apiVersion: v1" ;;
esac
'''


@pytest.mark.usefixtures('loose_umask')
def test_the_k3d_kubeconfig_is_0600_even_if_it_existed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / 'tools'
    tools.mkdir()
    for name in ('k3d', 'docker', 'kubectl'):
        (tools / name).write_text(_FAKE_TOOL)
        (tools / name).chmod(0o755)
    monkeypatch.setenv('PATH', f'{tools}{os.pathsep}/usr/bin{os.pathsep}/bin')
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))  # no cached binaries: PATH's kubectl
    monkeypatch.delenv(BINARIES_ENV_VAR, raising=False)
    work_dir = tmp_path / 'k3d'
    work_dir.mkdir(mode=0o755)
    (work_dir / 'k3d.kubeconfig').write_text('stale')
    (work_dir / 'k3d.kubeconfig').chmod(0o644)
    with run_k3d_cluster(work_dir) as cluster:
        modes = {path.name: _mode(path) for path in work_dir.iterdir()}
        assert cluster.kubeconfig == work_dir / 'kubeconfig'
    assert modes == {'k3d.kubeconfig': 0o600, 'kubeconfig': 0o600}
    assert _mode(work_dir) == 0o700
    assert 'admin credentials' in (work_dir / 'k3d.kubeconfig').read_text()
