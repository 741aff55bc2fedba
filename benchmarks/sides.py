"""
The sides compared, each run as its own operator process and observed from outside.

- ``ours``: the ``kopf`` command of this environment (kopf-core, kopf-client, kopf-cli).
- ``upstream``: ``kopf`` of upstream Kopf from PyPI, installed into a virtual
  environment of its own (never into this one), built once and cached
  (``integration/upstream.py``, shared with the migration tests).
- ``bare``: no framework (``bare.py``): the bound of what the API server allows.
- ``go``: the Go peer (``gopeer/``): a minimal controller-runtime operator doing the same
  visible work, built once from Go modules with the machine's Go (``gopeer_build.py``).
- ``ours-metrics``: ``ours`` with ``--metrics`` on a free port, scraped every
  :data:`SCRAPE_INTERVAL` seconds while it runs (more often than Prometheus
  usually does): the cost of the metrics, beside ``ours`` without them.

The framework sides run the very same file, ``bench_operator.py``, with
``--standalone -n <namespace>``. The process's CPU time and peak RSS are read
with psutil (and the kernel's own high-water mark of RSS where there is one).

The event loop of the framework sides is chosen for both alike, as ``kopf run``
chooses it (uvloop's if it can be imported, asyncio's own otherwise):

- ``asyncio``: uvloop is hidden from the operator's interpreter (``without_uvloop/``
  first on its path, where ``import uvloop`` raises ``ImportError``);
- ``uvloop``: installed for both (in this environment; for upstream, in an
  environment of its own with ``kopf[uvloop]``).
"""
import dataclasses
import importlib.util
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import psutil

from benchmarks import gopeer_build, pinning
from benchmarks.loops import LOOPS
from integration import upstream

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
OPERATOR_FILE = pathlib.Path(__file__).resolve().parent / 'bench_operator.py'
UPSTREAM_VERSION = upstream.UPSTREAM_VERSION
SIDES = ('ours', 'upstream', 'bare', 'go')  # the default ones
ALL_SIDES = (*SIDES, 'ours-metrics')
WITHOUT_UVLOOP = pathlib.Path(__file__).resolve().parent / 'without_uvloop'
LOOP_LINE = re.compile(r'Event loop: (\w+)')  # logged by bench_operator.py at the start
_RSS_POLL_INTERVAL = 0.1
SCRAPE_INTERVAL = 1.0


class SideUnavailable(Exception):
    """The side cannot run at all (e.g. its environment failed to build)."""


@dataclasses.dataclass(frozen=True)
class Side:
    name: str
    argv: tuple[str, ...]  # the command up to (not including) the operator's own arguments
    version: str
    is_framework: bool = True
    metrics: bool = False  # served with --metrics and scraped while running
    loop: str = 'asyncio'  # the event loop of a framework side (the bound and the Go peer: none to choose)
    cpus: str | None = None  # the CPUs the operator is pinned to (taskset -c), or None: wherever

    def command(self, namespace: str) -> list[str]:
        if self.is_framework:
            return [*pinning.prefix(self.cpus), *self.argv, str(OPERATOR_FILE), '--standalone', '-n', namespace]
        return [*pinning.prefix(self.cpus), *self.argv, '--namespace', namespace]


def make_side(name: str, loop: str = 'asyncio') -> Side:
    if loop not in LOOPS:
        raise ValueError(f'Unknown event loop: {loop!r}; expected one of {LOOPS}')
    if name in ('ours', 'ours-metrics'):
        if loop == 'uvloop' and importlib.util.find_spec('uvloop') is None:
            raise SideUnavailable('uvloop is not installed in this environment (the bench environment lists it: '
                                  'recreate it with `hatch env remove bench`).')
        return Side(name, (_ours_kopf(), 'run'), version=_our_versions(), metrics=name == 'ours-metrics', loop=loop)
    if name == 'upstream':
        try:
            executable = upstream.ensure_upstream(UPSTREAM_VERSION, extras=('uvloop',) if loop == 'uvloop' else ())
        except RuntimeError as e:
            raise SideUnavailable(str(e)) from e
        return Side('upstream', (str(executable), 'run'), version=f'kopf=={UPSTREAM_VERSION}', loop=loop)
    if name == 'go':  # no Python: it runs in the sessions of whichever loop it is given
        return dataclasses.replace(_go_peer(), loop=loop)
    if loop != 'asyncio':
        raise SideUnavailable(f'The side {name!r} runs on asyncio\'s own loop only.')
    if name == 'bare':
        return Side('bare', (sys.executable, '-m', 'benchmarks.bare'), version='aiohttp only', is_framework=False)
    raise ValueError(f'Unknown side: {name!r}; expected one of {ALL_SIDES}')


def _go_peer() -> Side:
    try:
        binary = gopeer_build.ensure_binary()
    except gopeer_build.BuildError as e:
        raise SideUnavailable(str(e)) from e
    version = (f"controller-runtime {gopeer_build.module_requirement('sigs.k8s.io/controller-runtime')}, "
               f"k8s.io/client-go {gopeer_build.module_requirement('k8s.io/client-go')}, "
               f'{gopeer_build.built_with(binary)}')
    return Side('go', (str(binary),), version=version, is_framework=False)


def _ours_kopf() -> str:
    candidate = pathlib.Path(sys.executable).parent / 'kopf'
    if not candidate.exists():
        raise SideUnavailable(f'No kopf command next to {sys.executable}: run in the `bench` hatch environment.')
    return str(candidate)


def _our_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version
    versions = []
    for package in ('kopf-core', 'kopf-client', 'kopf-cli'):
        try:
            versions.append(f'{package}=={version(package)}')
        except PackageNotFoundError:
            versions.append(f'{package} (not installed)')
    return ', '.join(versions)


class OperatorDied(Exception):
    pass


class WrongLoop(Exception):
    """The operator did not run on the event loop its side was to run on."""


class OperatorProcess:
    """One operator process of a side; its output goes to a log file; its resources are sampled."""

    def __init__(self, side: Side, *, namespace: str, plural: str, env: dict[str, str],
                 log_path: pathlib.Path) -> None:
        self.side = side
        self.argv = side.command(namespace)
        self.metrics_url = f'http://127.0.0.1:{_free_port()}/metrics' if side.metrics else None
        if self.metrics_url is not None:
            self.argv.append(f'--metrics={self.metrics_url}')
        self.scrapes = 0
        self.env = dict(os.environ, KOPF_BENCH_PLURAL=plural, **env)
        if side.is_framework and side.loop == 'asyncio':
            self.env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(WITHOUT_UVLOOP), self.env.get('PYTHONPATH')]))
        self.log_path = log_path
        self.started_at = 0.0
        self._popen: subprocess.Popen[bytes] | None = None
        self._process: psutil.Process | None = None
        self._peak_rss = 0
        self._stop_sampling = threading.Event()
        self._sampler: threading.Thread | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open('ab') as log:
            self.started_at = time.monotonic()
            self._popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           cwd=REPO_ROOT, start_new_session=True)
        self._process = psutil.Process(self._popen.pid)
        self._sampler = threading.Thread(target=self._sample_rss, name='rss-sampler', daemon=True)
        self._sampler.start()
        if self.metrics_url is not None:
            threading.Thread(target=self._scrape, args=(self.metrics_url,), name='scraper', daemon=True).start()

    def check_alive(self) -> None:
        if self._popen is not None and self._popen.poll() is not None:
            raise OperatorDied(f'The {self.side.name} operator has exited with {self._popen.returncode}:\n'
                               f'{self.log_tail()}')

    def cpu_seconds(self) -> float:
        """The user+system CPU time of the process so far."""
        self.check_alive()
        assert self._process is not None
        times = self._process.cpu_times()
        return float(times.user + times.system)

    def peak_rss_bytes(self) -> int:
        """The highest RSS seen by sampling, or the kernel's own high-water mark if higher (Linux)."""
        if self._popen is not None and self._popen.poll() is None:
            self._peak_rss = max(self._peak_rss, _kernel_peak_rss(self._popen.pid))
        return self._peak_rss

    def stop(self, timeout: float = 30.0) -> int | None:
        """Stop it as Ctrl-C does; kill it if it does not stop in time (then the exit code is None)."""
        if self._popen is None:
            return None
        self.peak_rss_bytes()
        try:
            if self._popen.poll() is None:
                self._popen.send_signal(signal.SIGINT)
                try:
                    self._popen.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self._popen.kill()
                    self._popen.wait()
                    return None
            return self._popen.returncode
        finally:
            self._stop_sampling.set()
            if self._sampler is not None:
                self._sampler.join()

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors='replace')
        except FileNotFoundError:
            return ''
        return '\n'.join(text.splitlines()[-lines:])

    def _sample_rss(self) -> None:
        assert self._process is not None
        while not self._stop_sampling.wait(_RSS_POLL_INTERVAL):
            try:
                self._peak_rss = max(self._peak_rss, int(self._process.memory_info().rss))
            except psutil.Error:
                return


    def _scrape(self, url: str) -> None:
        """As Prometheus does: the whole exposition, again and again, until the operator stops."""
        while not self._stop_sampling.wait(SCRAPE_INTERVAL):
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    response.read()
                self.scrapes += 1
            except OSError:  # not yet listening, or already gone
                pass


def check_loop(side: Side, log_path: pathlib.Path) -> None:
    """Fail unless every start in the log reported the side's event loop (not only was meant to use it)."""
    if not side.is_framework:
        return
    try:
        found = LOOP_LINE.findall(log_path.read_text(errors='replace'))
    except FileNotFoundError:
        found = []
    if not found or any(loop != side.loop for loop in found):
        raise WrongLoop(f'The {side.name} operator was to run on {side.loop}; '
                        f'its log reports {", ".join(found) or "no event loop"}.')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


def _kernel_peak_rss(pid: int) -> int:
    try:
        status = pathlib.Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return 0
    match = re.search(r'^VmHWM:\s+(\d+) kB', status, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0
