"""
The plugin's defaults as a user meets them: which cluster, the first build, and Go's absence.

Each pytest run here is a subprocess in a sandbox: no cache of binaries, an empty
``PATH`` (plus the fakes a test puts there), and a ``$KUBECONFIG`` of a cluster
that must not be used unless asked for.
"""
import os
import pathlib

import pytest

from kopf_testing.controlplane import BINARIES_ENV_VAR, CLUSTER_ENV_VAR, choose_kind

pytest_plugins = ['pytester']

FAKE_KUBECONFIG = '''\
apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: 'https://prod.example.com:6443'}}]
users: [{name: admin, user: {token: do-not-use}}]
contexts: [{name: prod, context: {cluster: prod, user: admin}}]
current-context: prod
'''
TESTS = '''
def test_kind(kopf_cluster_kind):
    assert kopf_cluster_kind == 'local'

def test_cluster(kopf_cluster):
    pass
'''


@pytest.fixture
def sandbox(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A ``PATH`` directory for fakes (with a kubectl that leaves a trace), no binaries anywhere, a kubeconfig."""
    bin_dir = tmp_path / 'fake-bin'
    bin_dir.mkdir()
    _script(bin_dir / 'kubectl', f'echo "$@" >> {tmp_path / "kubectl-calls"}\nexit 1')
    kubeconfig = tmp_path / 'user.kubeconfig'
    kubeconfig.write_text(FAKE_KUBECONFIG)
    os.utime(kubeconfig, (1_000_000_000, 1_000_000_000))
    monkeypatch.setenv('PATH', str(bin_dir))
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    monkeypatch.setenv('KUBECONFIG', str(kubeconfig))
    monkeypatch.delenv(BINARIES_ENV_VAR, raising=False)
    monkeypatch.delenv(CLUSTER_ENV_VAR, raising=False)
    return bin_dir


def _script(path: pathlib.Path, body: str) -> None:
    path.write_text(f'#!/bin/sh\n{body}\n')
    path.chmod(0o755)


def _run(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makepyfile(TESTS)
    return pytester.runpytest_subprocess('-p', 'no:randomly', '-p', 'no:cacheprovider')


def test_by_default_the_shells_kubeconfig_is_left_alone_and_without_go_one_line_names_the_ways_out(
        pytester: pytest.Pytester, sandbox: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = _run(pytester)
    result.assert_outcomes(passed=1, errors=1)  # the kind is local, and there is no Go to build it with
    kubeconfig = tmp_path / 'user.kubeconfig'
    assert kubeconfig.read_text() == FAKE_KUBECONFIG
    assert kubeconfig.stat().st_mtime == 1_000_000_000
    assert not (tmp_path / 'kubectl-calls').exists()  # the existing cluster's path was never taken

    output = result.stdout.str()
    # pytest's own short summary repeats the message on wide terminals ($COLUMNS); it is not ours.
    lines = [line for line in result.stdout.lines
             if 'Go is not found on PATH' in line and not line.startswith('ERROR ')]
    assert len(lines) == 1, output
    assert 'install Go 1.' in lines[0]
    assert f'${BINARIES_ENV_VAR}' in lines[0]
    assert '--kopf-cluster=memory' in lines[0]
    assert 'Traceback' not in output and 'During handling' not in output
    assert '_builder.py' not in output  # no frames of the plugin or the builder


def test_a_failed_build_shows_its_progress_and_fails_the_test(
        pytester: pytest.Pytester, sandbox: pathlib.Path) -> None:
    _script(sandbox / 'go', 'echo k8s.io/fake/pkg/compiled\necho "compile: something is broken"\nexit 2')
    result = _run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    assert 'Captured stderr' not in output  # the progress went to the terminal, not into the capture
    result.stdout.fnmatch_lines([
        f'Building kube-apiserver, kube-controller-manager, kubectl (v1.*) with {sandbox}/go (the log: *) ...',
        f'Building kube-apiserver, kube-controller-manager, kubectl (v1.*) with {sandbox}/go: failed in *s.',
        '*Building the control plane failed (exit code 2); see *build.log:',
        '*compile: something is broken*',
    ])
    assert ': done in' not in output
    assert 'Traceback' not in output and 'During handling' not in output


def test_a_bad_kind_in_the_variable_is_refused_before_any_test(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLUSTER_ENV_VAR, 'prod')
    pytester.makepyfile('def test_it():\n    pass\n')
    result = pytester.runpytest_subprocess('-p', 'no:randomly')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*${CLUSTER_ENV_VAR} is 'prod', which is not a kind of cluster: "
                                 "set it to one of local, existing, k3d, memory, or unset it for a local one.*"])


@pytest.mark.parametrize('option, environ, expected', [
    (None, {}, 'local'),
    (None, {'KUBECONFIG': '/home/me/.kube/config'}, 'local'),
    (None, {'KUBECONFIG': '/home/me/.kube/config', CLUSTER_ENV_VAR: 'existing'}, 'existing'),
    (None, {CLUSTER_ENV_VAR: 'memory'}, 'memory'),
    (None, {CLUSTER_ENV_VAR: ''}, 'local'),
    ('local', {CLUSTER_ENV_VAR: 'existing'}, 'local'),
    ('existing', {}, 'existing'),
])
def test_the_kind_is_asked_for_or_local(option: str | None, environ: dict[str, str], expected: str) -> None:
    assert choose_kind(option, choices=('local', 'existing', 'k3d', 'memory'), environ=environ) == expected
