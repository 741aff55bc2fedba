"""Where the control-plane binaries are taken from, and what the user sees while they are built."""
import io
import os
import pathlib

import pytest

from kopf_testing.controlplane import (
    BINARIES,
    BINARIES_ENV_VAR,
    BuildError,
    ensure_binaries,
    get_cache_dir,
    locate_binaries,
    report_progress_to,
)
from kopf_testing.controlplane._builder import GoNotFound, read_kubernetes_version
from kopf_testing.controlplane._lookup import find_existing_binaries
from kopf_testing.controlplane._progress import BuildProgress


def _make_binaries(directory: pathlib.Path, names: tuple[str, ...] = BINARIES) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text('#!/bin/sh\n')
        (directory / name).chmod(0o755)
    return directory


@pytest.fixture(autouse=True)
def isolated(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No real cache, no binaries or Go on PATH, no directory in the variable."""
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    monkeypatch.setenv('PATH', str(tmp_path / 'empty-path'))
    monkeypatch.delenv(BINARIES_ENV_VAR, raising=False)


def test_the_variable_wins_over_the_cache_and_path(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = _make_binaries(tmp_path / 'chosen')
    _make_binaries(get_cache_dir(read_kubernetes_version()) / 'bin')
    monkeypatch.setenv('PATH', str(_make_binaries(tmp_path / 'on-path')))
    monkeypatch.setenv(BINARIES_ENV_VAR, str(chosen))
    assert locate_binaries() == chosen


def test_an_incomplete_directory_in_the_variable_is_an_error(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BINARIES_ENV_VAR, str(_make_binaries(tmp_path / 'half', ('etcd', 'kubectl'))))
    with pytest.raises(BuildError, match=r"has no executable kube-apiserver, kube-controller-manager\."):
        locate_binaries()


def test_the_cache_wins_over_path(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = _make_binaries(get_cache_dir(read_kubernetes_version()) / 'bin')
    monkeypatch.setenv('PATH', str(_make_binaries(tmp_path / 'on-path')))
    assert locate_binaries() == cached


def test_path_is_used_when_one_directory_has_all(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = _make_binaries(tmp_path / 'on-path')
    monkeypatch.setenv('PATH', f'{tmp_path / "nothing"}{os.pathsep}{on_path}')
    assert locate_binaries() == on_path


def test_binaries_scattered_over_path_are_not_mixed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = _make_binaries(tmp_path / 'one', ('etcd', 'kubectl'))
    two = _make_binaries(tmp_path / 'two', ('kube-apiserver', 'kube-controller-manager'))
    monkeypatch.setenv('PATH', f'{one}{os.pathsep}{two}')
    assert find_existing_binaries() is None


def test_without_go_one_line_says_what_to_install_or_set() -> None:
    with pytest.raises(GoNotFound) as info:
        locate_binaries()
    message = str(info.value)
    assert '\n' not in message
    assert 'Go is not found on PATH' in message
    assert 'install Go 1.' in message and 'https://go.dev/doc/install' in message
    assert f'${BINARIES_ENV_VAR}' in message
    assert '--kopf-cluster=memory' in message


def test_a_failed_build_step_is_reported_as_failed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_go = tmp_path / 'go-bin' / 'go'
    fake_go.parent.mkdir()
    fake_go.write_text('#!/bin/sh\necho "compile: something is broken"\nexit 1\n')
    fake_go.chmod(0o755)
    monkeypatch.setenv('PATH', str(fake_go.parent))
    lines: list[str] = []
    with report_progress_to(lines.append), pytest.raises(BuildError, match=r'failed \(exit code 1\)') as info:
        ensure_binaries('v1.99.0')
    assert 'compile: something is broken' in str(info.value)  # the log's tail
    assert lines[0].startswith('Building kube-apiserver, kube-controller-manager, kubectl (v1.99.0) with ')
    assert lines[-1].endswith(': failed in 0s.') and not any(': done in' in line for line in lines)


def test_a_successful_build_step_is_reported_as_done(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_go = tmp_path / 'go-bin' / 'go'
    fake_go.parent.mkdir()
    # `go build ... -o DIR/ pkgs...` or `-o DIR/etcd pkg`: make executables where the build would put them.
    fake_go.write_text('#!/bin/sh\nPATH=/usr/bin:/bin\nwhile [ "$1" != "-o" ]; do shift; done\nout="$2"\n'
                       'case "$out" in */) for n in kube-apiserver kube-controller-manager kubectl; do '
                       'printf "#!/bin/sh\\n" > "$out$n"; chmod +x "$out$n"; done ;; '
                       '*) printf "#!/bin/sh\\n" > "$out"; chmod +x "$out" ;; esac\n')
    fake_go.chmod(0o755)
    monkeypatch.setenv('PATH', str(fake_go.parent))
    lines: list[str] = []
    with report_progress_to(lines.append):
        bin_dir = ensure_binaries('v1.99.0')
    assert sorted(path.name for path in bin_dir.iterdir()) == sorted(BINARIES)
    assert [line.rsplit(': ', 1)[-1] for line in lines if ': done in' in line] == ['done in 0s.', 'done in 0s.']


def test_progress_lines_say_what_is_built_how_long_and_the_latest_package(tmp_path: pathlib.Path) -> None:
    log_path = tmp_path / 'build.log'
    log_path.write_text('$ go build ...\nk8s.io/apiserver/pkg/server\n')
    stream = io.StringIO()
    with BuildProgress('Building kube-apiserver', log_path, interval=0.01, stream=stream):
        while stream.getvalue().count('\n') < 3:
            pass
    lines = stream.getvalue().splitlines()
    assert lines[0] == f'Building kube-apiserver (the log: {log_path}) ...'
    assert lines[1] == 'Building kube-apiserver: 0s elapsed; last: k8s.io/apiserver/pkg/server'
    assert lines[-1] == 'Building kube-apiserver: done in 0s.'


def test_progress_reports_a_failure(tmp_path: pathlib.Path) -> None:
    stream = io.StringIO()
    with pytest.raises(RuntimeError), BuildProgress('Building etcd', tmp_path / 'absent.log', stream=stream):
        raise RuntimeError('boom')
    assert stream.getvalue().splitlines()[-1] == 'Building etcd: failed in 0s.'
