"""Operator processes that a failed test left running are killed at the exit, not left to the next tests."""
import pathlib
import sys

from kopf_testing import OperatorProcess
from kopf_testing._process import _kill_the_unstopped, _unstopped

SLEEPER = [sys.executable, '-c', 'import time; time.sleep(600)']


def sleeper(tmp_path: pathlib.Path, name: str) -> OperatorProcess:
    process = OperatorProcess([], log_path=tmp_path / f'{name}.log')
    process.args = SLEEPER
    process.start()
    assert process.process is not None
    return process


def test_a_process_left_running_is_killed_at_the_exit(tmp_path: pathlib.Path) -> None:
    left = sleeper(tmp_path, 'left')
    assert left.process is not None
    _kill_the_unstopped()  # what runs at the interpreter's exit
    assert left.process.poll() is not None
    assert left.process not in _unstopped


def test_a_stopped_process_is_not_tracked_anymore(tmp_path: pathlib.Path) -> None:
    stopped = sleeper(tmp_path, 'stopped')
    assert stopped.process in _unstopped
    stopped.stop()
    assert stopped.process not in _unstopped
