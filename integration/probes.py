"""
Reaching an operator's HTTP endpoints from a test: a free port, a raw exchange, a sampler.

The exchanges are raw sockets, not an HTTP client: the security tests send what no
client would (heads that never end, malformed request lines), and every test reads
the answer the same way.
"""
import pathlib
import socket
import threading
from collections.abc import Callable
from typing import Generic, Optional, TypeVar

from integration.operating import OperatorProcess
from kopf_testing import poll

T = TypeVar('T')

HEALTH_OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'health_probes.py')


def free_port() -> int:
    """A port that nothing listens on now (the operator binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port: int = sock.getsockname()[1]
        return port


def exchange(port: int, raw: bytes, timeout: float = 30) -> Optional[tuple[int, bytes]]:
    """The status and body of the response, or ``None`` if there is none (nothing listens, or no answer)."""
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=timeout) as sock:
            sock.sendall(raw)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    except OSError:
        return None
    head, _, body = b''.join(chunks).partition(b'\r\n\r\n')
    return (int(head.split(b' ', 2)[1]), body) if head else None


class Sampler(threading.Thread, Generic[T]):
    """Calls a function repeatedly until stopped, and keeps what it returns."""

    def __init__(self, fn: Callable[[], T], interval: float) -> None:
        super().__init__(daemon=True)
        self.fn, self.interval = fn, interval
        self.results: list[T] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.results.append(self.fn())
            self.stopped.wait(self.interval)

    def stop(self) -> list[T]:
        self.stopped.set()
        self.join()
        return self.results


def start_health_operator(namespace: str, tmp_path: pathlib.Path) -> tuple[OperatorProcess, int]:
    """``operators_src/health_probes.py`` with ``--liveness`` on a free port, started and answering ``/healthz``."""
    port = free_port()
    (tmp_path / 'gate').touch()  # no waiting at the start
    process = OperatorProcess([HEALTH_OPERATOR, '-n', namespace, f'--liveness=http://127.0.0.1:{port}/healthz'],
                              log_path=tmp_path / 'operator.log',
                              env={'HEALTH_GATE_FILE': str(tmp_path / 'gate'),
                                   'HEALTH_FAIL_FILE': str(tmp_path / 'fail')})
    process.start()
    try:
        poll(lambda: (r := exchange(port, b'GET /healthz HTTP/1.1\r\n\r\n')) is not None and r[0] == 200, timeout=60)
    except BaseException:
        process.stop()
        raise
    return process, port
