"""
Stopping an operator whose startup handler is still retrying: Ctrl-C, SIGTERM, the stop-flag.

Inputs: an operator whose startup handler fails temporarily forever (so it never
starts serving), stopped after its third attempt. Outputs: the exit status, how
soon it exits (against how long the same process took to start, on the same
machine at the same moment), and its log: Kopf's warning that the startup was
interrupted, and the cleanup handler's line.
"""
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from integration.operating import DEFAULT_TIMEOUT, OperatorProcess, patient

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'retrying_startup.py')
INTERRUPTED = "Startup activity is only partially executed due to cancellation."


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_stops_a_retrying_startup(namespace: str, tmp_path: pathlib.Path, sig: signal.Signals) -> None:
    op = OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log')
    launched = time.monotonic()
    op.start()
    assert op.process is not None
    try:
        op.wait_for(r"Startup attempt #1\.")
        starting = time.monotonic() - launched  # the interpreter, the imports, the login: this machine's pace now
        op.wait_for(r"Startup attempt #2\.")
        signalled = time.monotonic()
        op.process.send_signal(sig)
        returncode = op.process.wait(timeout=patient(DEFAULT_TIMEOUT))
        elapsed = time.monotonic() - signalled
    except subprocess.TimeoutExpired:
        raise AssertionError(f"The operator did not stop while its startup was retrying:\n{op.log}") from None
    finally:
        if op.process.poll() is None:  # whatever failed, it is not left running for the rest of the session
            op.process.kill()
            op.process.wait()
    assert returncode == 0, op.log
    print(f"{sig.name}: stopped in {elapsed:.2f}s, started in {starting:.2f}s")
    # Stopping is quicker than starting (no waiting for the retries, or for the exit's timeouts of 2-5 s).
    assert elapsed < starting, (elapsed, starting, op.log)
    assert f"Signal {sig.name} is received. Operator is stopping." in op.log
    assert INTERRUPTED in op.log
    assert "Cleaned up." in op.log
    assert "Traceback" not in op.log


def test_stop_flag_stops_a_retrying_startup(namespace: str, tmp_path: pathlib.Path) -> None:
    op = OperatorProcess([], log_path=tmp_path / 'app.log')
    op.args = [sys.executable, OPERATOR, namespace]
    op.start()
    assert op.process is not None
    try:
        returncode = op.process.wait(timeout=patient(DEFAULT_TIMEOUT))  # the start, 3 attempts, the stop
    except subprocess.TimeoutExpired:
        raise AssertionError(f"The embedded operator did not return on the stop-flag:\n{op.log}") from None
    finally:
        if op.process.poll() is None:
            op.process.kill()
            op.process.wait()
    assert returncode == 0, op.log
    assert "Stop-flag is raised. Operator is stopping." in op.log
    assert INTERRUPTED in op.log
    assert "Cleaned up." in op.log
    assert "The embedded operator has returned." in op.log
