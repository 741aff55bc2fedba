"""Where the control-plane binaries are taken from, and what the user sees while they are built."""
import io
import os
import pathlib

import pytest

from kopf_testing.controlplane import BINARIES, BINARIES_ENV_VAR, BuildError, get_cache_dir, locate_binaries
from kopf_testing.controlplane._builder import read_kubernetes_version
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


def test_without_go_the_message_says_what_to_install_or_set() -> None:
    with pytest.raises(BuildError) as info:
        locate_binaries()
    message = str(info.value)
    assert 'Go is not found on PATH' in message
    assert 'https://go.dev/doc/install' in message
    assert f'${BINARIES_ENV_VAR}' in message


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
