"""
``settings.process.ultimate_exiting_timeout``: a stuck exit ends with SIGKILL.

Inputs: an operator whose cleanup handler never finishes, with a short timeout,
stopped with SIGTERM (as Kubernetes stops pods). Outputs: the process's exit
status and its log.
"""
import pathlib
import signal
import subprocess
import sys

from integration.operating import OperatorProcess
from kopf_testing._polling import DEFAULT_TIMEOUT, patient

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'stuck_exit.py')
EMBEDDED = str(pathlib.Path(__file__).parent / 'operators_src' / 'embedded_exit.py')


def test_stuck_exit_is_killed_after_the_ultimate_exiting_timeout(namespace: str, tmp_path: pathlib.Path) -> None:
    op = OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log',
                         env={'TEST_ULTIMATE_EXITING_TIMEOUT': '2'})
    op.start()
    assert op.process is not None
    try:
        op.wait_for(r"Configured\.")
        op.process.send_signal(signal.SIGTERM)
        op.wait_for(r"Cleaning up forever\.")
        returncode = op.process.wait(timeout=patient(DEFAULT_TIMEOUT))
    except subprocess.TimeoutExpired:
        op.process.kill()
        op.process.wait()
        raise AssertionError(f"The stuck operator was not killed:\n{op.log}") from None
    assert returncode == -signal.SIGKILL
    assert "has not exited in 2.0s after the signal: killing it." in op.log


def test_an_exit_in_time_is_not_killed_later(namespace: str, tmp_path: pathlib.Path) -> None:
    # An embedded operator that has exited gracefully leaves its application alone.
    op = OperatorProcess([], log_path=tmp_path / 'app.log')
    op.args = [sys.executable, EMBEDDED, namespace]
    op.start()
    assert op.process is not None
    try:
        op.wait_for(r"Configured\.")
        op.process.send_signal(signal.SIGTERM)
        returncode = op.process.wait(timeout=patient(DEFAULT_TIMEOUT))
    except subprocess.TimeoutExpired:
        op.process.kill()
        op.process.wait()
        raise AssertionError(f"The application has not exited:\n{op.log}") from None
    assert returncode == 0, op.log
    assert "The application has outlived the timeout." in op.log
