"""
The operator under the soak: a ``kopf run`` process, killed with SIGKILL and restarted on schedule.

It also samples the operator's resident memory (from ``/proc``), per process:
the first sample after a warm-up period and the latest one, for the leak check.
"""
import asyncio
import dataclasses
import os
import pathlib
import signal
import subprocess
import time

from integration.operating import REPO_ROOT, kopf_executable

from . import _records, _schedule

OPERATOR = pathlib.Path(__file__).with_name('operator.py')


@dataclasses.dataclass
class Incarnation:
    pid: int
    started: float
    warm_rss: int | None = None
    last_rss: int | None = None
    ended: float | None = None


class Supervisor:
    def __init__(self, *, namespace: str, kubeconfig: pathlib.Path, runs: pathlib.Path, journal: pathlib.Path,
                 log_path: pathlib.Path, warmup: float, replica: str | None = None) -> None:
        # A replica of several: --shards=auto, its identity (and so its Lease) kept across its restarts.
        sharded = ['--shards=auto'] if replica is not None else []
        self._argv = [kopf_executable(), 'run', str(OPERATOR), '--standalone', '-n', namespace, *sharded]
        self._env = dict(os.environ, KUBECONFIG=str(kubeconfig), KOPF_CHAOS_RUNS=str(runs),
                         PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get('PYTHONPATH')])))
        if replica is not None:
            self._env['POD_ID'] = replica
        self._journal = journal
        self._log_path = log_path
        self._warmup = warmup
        self._process: subprocess.Popen[bytes] | None = None
        self.incarnations: list[Incarnation] = []

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        with self._log_path.open('ab') as log:
            self._process = subprocess.Popen(self._argv, stdout=log, stderr=subprocess.STDOUT, env=self._env,
                                             cwd=REPO_ROOT)
        self.incarnations.append(Incarnation(self._process.pid, time.monotonic()))

    def kill(self) -> None:
        """kill -9 at this very moment, whatever the operator is doing, and start it again."""
        process = self._require_process()
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        self.incarnations[-1].ended = time.monotonic()
        _records.append(self._journal, event='fault', fault=_schedule.KILL_OPERATOR, killed_pid=process.pid)
        self.start()

    def stop(self, timeout: float = 60) -> int:
        """Stop it gracefully (as Ctrl-C does); kill it if it does not stop in time."""
        process = self._require_process()
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise RuntimeError(f'The operator did not stop within {timeout}s; see {self._log_path}.') from None
        finally:
            self.incarnations[-1].ended = time.monotonic()

    async def watch(self, interval: float = 2.0) -> None:
        """Sample the memory; restart the operator if it has exited on its own (journaled as a crash)."""
        while True:
            process = self._require_process()
            if process.poll() is not None:
                _records.append(self._journal, event='operator-exited', pid=process.pid, code=process.returncode)
                self.start()
            else:
                self._sample(self.incarnations[-1])
            await asyncio.sleep(interval)

    def memory(self) -> tuple[int | None, int | None]:
        """The warmed-up and the latest RSS of the last process if it got warm, else of the longest-lived one."""
        warm = [incarnation for incarnation in self.incarnations if incarnation.warm_rss is not None]
        if not warm:
            return None, None
        chosen = warm[-1] if warm[-1] is self.incarnations[-1] else max(
            warm, key=lambda i: (i.ended or time.monotonic()) - i.started)
        return chosen.warm_rss, chosen.last_rss

    def _sample(self, incarnation: Incarnation) -> None:
        rss = _read_rss(incarnation.pid)
        if rss is None:
            return
        incarnation.last_rss = rss
        if incarnation.warm_rss is None and time.monotonic() - incarnation.started >= self._warmup:
            incarnation.warm_rss = rss

    def _require_process(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError('The operator is not started.')
        return self._process


def _read_rss(pid: int) -> int | None:
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
