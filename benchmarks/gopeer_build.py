"""
The Go peer's binary (``gopeer/``, a controller-runtime operator), built from Go modules with the machine's Go.

As with the local control plane's binaries (kopf-testing's ``_builder.py``), a build
takes long enough to be done once: the binary is cached outside the repository in
``$XDG_CACHE_HOME/kopf-bench-gopeer/<key>/bin/gopeer`` (``~/.cache`` by default), where
the key is a digest of the module's sources (go.mod, go.sum, the .go files), so an edit
builds anew and an unchanged checkout never does. The build runs under an exclusive
file lock (two runs at once build it once), into a temporary directory renamed into
place when complete; its output goes to ``build.log`` beside ``bin/``.

The module pins the control plane's Kubernetes release (k8s.io/* v0.37.2), so on a
machine where the control plane is built, Go's own build cache has most packages
compiled already: the peer then builds in tens of seconds, not minutes.
"""
import contextlib
import fcntl
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

MODULE_DIR = pathlib.Path(__file__).resolve().parent / 'gopeer'
BINARY = 'gopeer'
GO_VERSION_FILE = 'go-version'  # the toolchain that built the binary, for the results' header


class BuildError(Exception):
    """The peer cannot be built: no Go, or the build failed (with the log's tail)."""


def module_requirement(name: str, module_dir: pathlib.Path = MODULE_DIR) -> str:
    """The version of a module in go.mod, e.g. ``v0.25.2`` for ``sigs.k8s.io/controller-runtime``."""
    match = re.search(rf'^\s*{re.escape(name)}\s+(v\S+)', (module_dir / 'go.mod').read_text(), re.MULTILINE)
    return match.group(1) if match else 'unknown'


def source_key(module_dir: pathlib.Path = MODULE_DIR) -> str:
    """A digest of what the binary is built from: a different source is a different binary."""
    digest = hashlib.sha256()
    for path in sorted([*module_dir.glob('*.go'), module_dir / 'go.mod', module_dir / 'go.sum']):
        digest.update(path.name.encode() + b'\0' + path.read_bytes() + b'\0')
    return digest.hexdigest()[:16]


def cache_dir(module_dir: pathlib.Path = MODULE_DIR) -> pathlib.Path:
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return pathlib.Path(base) / 'kopf-bench-gopeer' / source_key(module_dir)


def find_binary(module_dir: pathlib.Path = MODULE_DIR) -> pathlib.Path | None:
    """The cached binary if it is built already (for the smoke test: is the side cheap to include?)."""
    binary = cache_dir(module_dir) / 'bin' / BINARY
    return binary if os.access(binary, os.X_OK) else None


def ensure_binary(module_dir: pathlib.Path = MODULE_DIR) -> pathlib.Path:
    """The binary, built first if it is not cached; only one process builds, the others wait for it."""
    found = find_binary(module_dir)
    if found is not None:
        return found
    root = cache_dir(module_dir)
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(root / '.lock'):
        found = find_binary(module_dir)
        if found is not None:  # built by another process while this one waited
            return found
        shutil.rmtree(root / 'bin', ignore_errors=True)  # incomplete: cannot happen with the rename, unless by hand
        tmp_dir = pathlib.Path(tempfile.mkdtemp(prefix='bin.tmp-', dir=root))
        try:
            _go_build(module_dir, tmp_dir, log_path=root / 'build.log')
            tmp_dir.rename(root / 'bin')
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)
    return root / 'bin' / BINARY


def built_with(binary: pathlib.Path) -> str:
    """The Go toolchain that built the binary, as recorded beside it (e.g. ``go1.26.8``)."""
    try:
        return (binary.parent / GO_VERSION_FILE).read_text().strip()
    except OSError:
        return 'unknown Go'


@contextlib.contextmanager
def _exclusive_lock(path: pathlib.Path) -> Iterator[None]:
    with path.open('a') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _go_build(module_dir: pathlib.Path, out_dir: pathlib.Path, *, log_path: pathlib.Path) -> None:
    go = shutil.which('go')
    if go is None:
        raise BuildError(f'Go is not found on PATH; the Go peer is built with it once from {module_dir} '
                         f'(install Go {_go_line(module_dir)} or newer: https://go.dev/doc/install).')
    # A static binary, as the control plane's (no C compiler needed); the same flags as its build,
    # so that Go's build cache shares the k8s.io packages compiled for it.
    command = [go, 'build', '-v', '-ldflags', '-s -w', '-o', str(out_dir / BINARY), '.']
    env = {**os.environ, 'CGO_ENABLED': '0'}
    print(f'Building the Go peer with {go} (once; cached in {log_path.parent}; log: {log_path})',
          file=sys.stderr, flush=True)
    started = time.monotonic()
    with log_path.open('w') as log:
        log.write(f'$ {" ".join(command)}\n')
        log.flush()
        result = subprocess.run(command, cwd=module_dir, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
        log.write(f'# exit code {result.returncode} after {time.monotonic() - started:.1f}s\n')
    if result.returncode != 0:
        tail = ''.join(log_path.read_text().splitlines(keepends=True)[-30:])
        raise BuildError(f'Building the Go peer failed (exit code {result.returncode}; it needs Go '
                         f'{_go_line(module_dir)} or newer); see {log_path}:\n{tail}')
    version = subprocess.run([go, 'env', 'GOVERSION'], capture_output=True, text=True, check=False).stdout.strip()
    (out_dir / GO_VERSION_FILE).write_text(version + '\n')
    print(f'Built the Go peer in {time.monotonic() - started:.0f} s.', file=sys.stderr, flush=True)


def _go_line(module_dir: pathlib.Path) -> str:
    match = re.search(r'^go\s+(\S+)', (module_dir / 'go.mod').read_text(), re.MULTILINE)
    return match.group(1) if match else 'of go.mod'


if __name__ == '__main__':  # python -m benchmarks.gopeer_build: build it ahead of a run
    print(ensure_binary())
