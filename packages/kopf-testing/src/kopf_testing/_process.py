"""
Running operators as users run them: ``kopf run ...`` in a separate process.

The operator's output goes to a file, so that the tests can wait for log lines
while it runs and inspect the whole log after it has stopped. Nothing is
mocked: the process talks to the cluster of the ``cluster`` fixture via the
inherited ``$KUBECONFIG``.
"""
import atexit
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import TracebackType
from typing import Optional, TypeVar, Union

from kopf_testing._logs import OperatorLog
from kopf_testing._polling import patient

_Self = TypeVar('_Self', bound='OperatorProcess')

# Every process started and not yet stopped. A test that fails between the start and its stop (e.g. in a
# wait for the operator's first log line) would leave its operator running for the rest of the session,
# taking the cores and the API server from the other tests: whatever is left is killed at the exit.
_unstopped: set['subprocess.Popen[bytes]'] = set()


@atexit.register
def _kill_the_unstopped() -> None:
    for process in list(_unstopped):
        if process.poll() is None:
            process.kill()
            process.wait()
    _unstopped.clear()


def kopf_executable() -> str:
    """The ``kopf`` command of the environment that runs the tests."""
    candidate = pathlib.Path(sys.executable).parent / 'kopf'
    if not candidate.exists():
        raise RuntimeError(f"The kopf command is not installed next to {sys.executable}: install kopf-cli.")
    return str(candidate)


class OperatorProcess(OperatorLog):
    """A ``kopf run`` subprocess with its log captured to a file."""

    def __init__(self, args: Sequence[str], *, log_path: pathlib.Path, env: Optional[dict[str, str]] = None,
                 cwd: Union[str, pathlib.Path, None] = None):
        self.args = [kopf_executable(), 'run', *args]
        self.log_path = log_path
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd
        self.process: Optional[subprocess.Popen[bytes]] = None
        self._offset = 0

    def __enter__(self: _Self) -> _Self:
        self.start()
        return self

    def __exit__(self, et: Optional[type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()

    def start(self) -> None:
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open('ab') as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT,
                                            env=self.env, cwd=self.cwd)
        _unstopped.add(self.process)

    def stop(self, timeout: float = 60) -> int:
        """Stop it as Ctrl-C does (gracefully); kill it if it does not stop in time."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            timeout = patient(timeout)
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(f"The operator did not stop within {timeout}s:\n{self.log}") from None
        _unstopped.discard(self.process)
        return self.process.returncode

    @property
    def log(self) -> str:
        """The output of this run only (the log file may hold earlier runs too)."""
        with self.log_path.open('rb') as f:
            f.seek(self._offset)
            return f.read().decode(errors='replace')

    def _why_stopped(self) -> Optional[str]:
        if self.process is not None and self.process.poll() is not None:
            return f'has exited ({self.process.returncode})'
        return None
