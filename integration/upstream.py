"""
Upstream Kopf as a black box: its own virtual environment, its own ``kopf run``.

The migration tests hand objects over between upstream Kopf and our packages, in
both directions, on the same cluster and with the same operator source. Upstream
Kopf must never be imported into the tests' environment (its ``kopf`` package
would shadow ours), so it lives in a separate virtual environment outside the
repository, created once and reused by later runs::

    ~/.cache/kopf-upstream/1.45.2/bin/kopf

Creation happens under an exclusive file lock, so that parallel test sessions
do not install into the same directory at once; a marker file written last
tells a complete environment from a half-installed one.

From a shell (at the repository root): ``python -m integration.upstream``.
"""
import contextlib
import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Optional

from integration.operating import OperatorProcess

UPSTREAM_VERSION = '1.45.2'


def get_cache_dir() -> pathlib.Path:
    root = os.environ.get('KOPF_UPSTREAM_CACHE') or str(pathlib.Path.home() / '.cache' / 'kopf-upstream')
    return pathlib.Path(root)


def find_base_python() -> str:
    """
    A Python interpreter to create the environment with: not one of a virtual environment.

    A venv made from inside another venv works, but depends on that venv staying in place;
    the base interpreter is more durable. Any Python 3.9+ can run upstream Kopf.
    """
    return getattr(sys, '_base_executable', None) or sys.executable


@contextlib.contextmanager
def _exclusive_lock(path: pathlib.Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open('a') as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # blocks while another process installs
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_upstream(version: str = UPSTREAM_VERSION, *, extras: Sequence[str] = ()) -> pathlib.Path:
    """
    The ``kopf`` executable of upstream Kopf of that version; installed on first use.

    With extras (e.g. ``uvloop``), in an environment of its own (``1.45.2+uvloop``),
    so that the plain one stays as the migration tests know it.
    """
    cache_dir = get_cache_dir()
    name = '+'.join([version, *sorted(extras)])
    requirement = f"kopf[{','.join(sorted(extras))}]=={version}" if extras else f'kopf=={version}'
    target = cache_dir / name
    executable = target / 'bin' / 'kopf'
    # Venvs hard-code their path in the scripts' shebangs, so one cannot be built elsewhere and
    # renamed into place: it is built at its final path, and a marker says it is complete.
    marker = target / '.installed'
    if marker.exists():
        return executable
    with _exclusive_lock(cache_dir / '.lock'):
        if marker.exists():  # another process has installed it while we waited
            return executable
        shutil.rmtree(target, ignore_errors=True)  # a leftover of an interrupted installation
        log_path = cache_dir / f'{name}.install.log'
        try:
            with log_path.open('w') as log:
                subprocess.run([find_base_python(), '-m', 'venv', str(target)],
                               stdout=log, stderr=subprocess.STDOUT, check=True)
                subprocess.run([str(target / 'bin' / 'python'), '-m', 'pip', 'install', '--quiet',
                                '--disable-pip-version-check', requirement],
                               stdout=log, stderr=subprocess.STDOUT, check=True)
        except subprocess.CalledProcessError as e:
            shutil.rmtree(target, ignore_errors=True)
            raise RuntimeError(f"Cannot install upstream {requirement} into {target}; see {log_path}") from e
        if not executable.exists():
            raise RuntimeError(f"Upstream Kopf {version} is installed into {target}, but has no {executable}.")
        marker.write_text(version)
    return executable


class UpstreamOperatorProcess(OperatorProcess):
    """Upstream Kopf's ``kopf run ...`` in its own process, as ``OperatorProcess`` runs ours."""

    def __init__(self, args: Sequence[str], *, log_path: pathlib.Path, env: Optional[dict[str, str]] = None,
                 version: str = UPSTREAM_VERSION):
        super().__init__(args, log_path=log_path, env=env)
        self.args = [str(ensure_upstream(version)), 'run', *args]
        # Our packages must not leak into upstream's interpreter via the tests' environment.
        for name in ['PYTHONPATH', 'VIRTUAL_ENV', 'PYTHONHOME']:
            self.env.pop(name, None)


if __name__ == '__main__':
    print(ensure_upstream())
