"""
Building the control-plane binaries from source with nothing but Go.

The binaries are far too big to keep in the repository and there is no single
official download for all four of them (etcd, kube-apiserver,
kube-controller-manager and kubectl of one release), so they are built from the
Go module in ``gomod/`` which pins the release. A cold build takes minutes, so
the result is cached outside the repository, per Kubernetes version, in
``$XDG_CACHE_HOME/kopf-controlplane/<version>/bin/`` (``~/.cache`` by default).

Several test processes may want the binaries at once (e.g. pytest-xdist
workers, or the demo started while tests run), so the build runs under an
exclusive file lock, and the finished binaries appear in one atomic rename of a
temporary directory: a directory named ``bin`` is always complete.
"""
import contextlib
import fcntl
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import TextIO

from ._progress import BuildProgress

GOMOD_DIR = pathlib.Path(__file__).parent / 'gomod'
BINARIES = ('etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl')
BINARIES_ENV_VAR = 'KOPF_CONTROLPLANE_BINARIES'

# The main packages, by binary name, relative to the module graph of gomod/.
_PACKAGES = {
    'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
    'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
    'kubectl': 'k8s.io/kubernetes/cmd/kubectl',
    'etcd': 'go.etcd.io/etcd/server/v3',
}


class BuildError(Exception):
    """The Go toolchain is missing or the build failed (the message has the log's tail)."""


class GoNotFound(BuildError):
    """No ``go`` on PATH: the message is one line naming the ways out."""


def read_kubernetes_version(gomod_dir: pathlib.Path = GOMOD_DIR) -> str:
    """The pinned ``k8s.io/kubernetes`` version, e.g. ``v1.35.4``: the one source of truth."""
    text = (gomod_dir / 'go.mod').read_text()
    match = re.search(r'^\s*k8s\.io/kubernetes\s+(v\d+\.\d+\.\d+\S*)', text, re.MULTILINE)
    if match is None:
        raise BuildError(f'No k8s.io/kubernetes requirement in {gomod_dir / "go.mod"}.')
    return match.group(1)


def _read_go_version(gomod_dir: pathlib.Path) -> str:
    """The Go version that the pinned release needs (go.mod's ``go`` line), for the messages."""
    match = re.search(r'^go\s+(\d+\.\d+)', (gomod_dir / 'go.mod').read_text(), re.MULTILINE)
    return match.group(1) if match else 'the version in go.mod'


def get_cache_dir(version: str) -> pathlib.Path:
    """The per-version cache directory (not the ``bin/`` inside it)."""
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return pathlib.Path(base) / 'kopf-controlplane' / version


def find_binaries(version: str | None = None) -> pathlib.Path | None:
    """The directory with all the binaries if they are built already, else ``None``."""
    version = version or read_kubernetes_version()
    bin_dir = get_cache_dir(version) / 'bin'
    return bin_dir if _is_complete(bin_dir) else None


def ensure_binaries(version: str | None = None, *, gomod_dir: pathlib.Path = GOMOD_DIR) -> pathlib.Path:
    """
    Return the directory with the binaries, building them first if missing.

    Only one process builds; the others wait on the lock and then find the
    binaries built. The Go build log stays next to ``bin/`` as ``build.log``.
    """
    version = version or read_kubernetes_version(gomod_dir)
    cache_dir = get_cache_dir(version)
    bin_dir = cache_dir / 'bin'
    if _is_complete(bin_dir):
        return bin_dir
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(cache_dir / '.lock', log_path=cache_dir / 'build.log'):
        if _is_complete(bin_dir):  # built by another process while we waited
            return bin_dir
        if bin_dir.exists():  # cannot happen with atomic renames, unless edited by hand
            shutil.rmtree(bin_dir)
        tmp_dir = pathlib.Path(tempfile.mkdtemp(prefix='bin.tmp-', dir=cache_dir))
        try:
            _run_go_build(version, gomod_dir=gomod_dir, out_dir=tmp_dir, log_path=cache_dir / 'build.log')
            tmp_dir.rename(bin_dir)
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)
    return bin_dir


def _is_complete(bin_dir: pathlib.Path) -> bool:
    return all(os.access(bin_dir / name, os.X_OK) for name in BINARIES)


@contextlib.contextmanager
def _exclusive_lock(path: pathlib.Path, *, log_path: pathlib.Path) -> Iterator[None]:
    with open(path, 'a') as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process builds: say so, since the wait takes minutes
            with BuildProgress('Waiting for another process to build the control plane', log_path):
                fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_go_build(version: str, *, gomod_dir: pathlib.Path, out_dir: pathlib.Path, log_path: pathlib.Path) -> None:
    go = shutil.which('go')
    if go is None:
        raise GoNotFound(
            f'Go is not found on PATH, and the local control plane ({version}) is built with it once: '
            f'install Go {_read_go_version(gomod_dir)} or newer (https://go.dev/doc/install), '
            f'or set ${BINARIES_ENV_VAR} to a directory with {", ".join(BINARIES)}, '
            f'or run the tests without a cluster (pytest --kopf-cluster=memory).')
    major, minor = re.findall(r'\d+', version)[:2]
    # kubectl and the servers report this version; without it they say v0.0.0-master.
    ldflags = ' '.join([
        '-s -w',
        f'-X k8s.io/component-base/version.gitVersion={version}',
        f'-X k8s.io/component-base/version.gitMajor={major}',
        f'-X k8s.io/component-base/version.gitMinor={minor}',
        f'-X k8s.io/client-go/pkg/version.gitVersion={version}',
    ])
    # Static binaries: a machine with Go but without a C compiler builds them too.
    env = {**os.environ, 'CGO_ENABLED': '0'}
    k8s_packages = [_PACKAGES[name] for name in BINARIES if name != 'etcd']
    commands = [
        # `-v` lists the packages as they are compiled: the progress display shows the latest one.
        [go, 'build', '-v', '-ldflags', ldflags, '-o', f'{out_dir}/', *k8s_packages],
        # etcd's main package is its module root, so `-o DIR/` would name it `v3`.
        [go, 'build', '-v', '-ldflags', '-s -w', '-o', str(out_dir / 'etcd'), _PACKAGES['etcd']],
    ]
    with open(log_path, 'w') as log:
        for command in commands:
            what = ', '.join(name for name, package in _PACKAGES.items() if package in command)
            with BuildProgress(f'Building {what} ({version}) with {go}', log_path):
                # Inside the progress block: a failure is reported as failed, not as done.
                _run_logged(command, cwd=gomod_dir, env=env, log=log, log_path=log_path)


def _run_logged(command: list[str], *, cwd: pathlib.Path, env: dict[str, str], log: TextIO,
                log_path: pathlib.Path) -> None:
    """Run one build command with its output in the log; a non-zero exit is a ``BuildError`` with the log's tail."""
    log.write(f'$ {" ".join(command)}\n')
    log.flush()
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.write(f'# exit code {result.returncode} after {time.monotonic() - started:.1f}s\n')
    log.flush()
    if result.returncode != 0:
        tail = ''.join(log_path.read_text().splitlines(keepends=True)[-40:])
        raise BuildError(f'Building the control plane failed (exit code {result.returncode}); '
                         f'see {log_path}:\n{tail}')
