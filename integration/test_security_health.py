"""
The health endpoint of a real operator under attack (issue 27 §1): ``kopf run --liveness=URL``.

Inputs: the operator ``operators_src/health_probes.py`` with ``--liveness`` on 127.0.0.1;
an asyncio client in the test process that opens thousands of connections to that port: half
send a 60 KB header line without its end, half a request head one line at a time that never
ends; each one reconnects as soon as the server closes it, for a while. Meanwhile, a thread
requests ``/healthz`` as a kubelet does, and another one samples the operator's RSS (psutil,
on its PID). Also: a malformed request line. (A failing probe's response, now with its id
only, is checked in ``test_health.py``.)
Outputs: the operator's RSS growth, the statuses and times of the probes during the attack,
the responses, and the operator's log. Nothing is mocked: the operator runs as users run it.

Before the limits (64 KiB per header line, no cap on connections, 10 s per request), such a
flood grew the operator by hundreds of megabytes (enough to OOM-kill a pod), a malformed
request line got no answer and a traceback in the log, and a failed probe's error was in the response.
"""
import asyncio
import dataclasses
import pathlib
import resource
import time
from collections.abc import Iterator
from typing import Any, Optional, TypeVar

import psutil
import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest
from integration.operating import OperatorProcess
from integration.probes import Sampler, exchange, start_health_operator

GROUP = 'health.kopf.dev'

ATTACKERS = 4000  # connections opened at once (each reconnects when closed)
ATTACK_SECONDS = 10.0  # after all of them have been opened
CONNECTING = 100  # connections being opened at a time
HUGE_LINE = b'GET /healthz HTTP/1.1\r\nX-Filler: ' + b'x' * 60_000  # no end of the line
SLOW_LINE = b'X-Slow: 1\r\n'  # one more header line every half second, the head never ends
RSS_GROWTH_LIMIT = 20 * 1024 * 1024
PROBE_TIMEOUT = 5.0


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'healthobjs', 'HealthObj'))


@pytest.fixture(scope='module', autouse=True)
def enough_file_descriptors() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = ATTACKERS + 1024
    if soft != resource.RLIM_INFINITY and soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"{ATTACKERS} connections need {wanted} file descriptors; the hard limit is {hard}.")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def ask(port: int, raw: bytes) -> Optional[tuple[int, bytes]]:
    """The status and body of the answer within a probe's timeout, or ``None`` (as kubelet would give up)."""
    return exchange(port, raw, timeout=PROBE_TIMEOUT)


@dataclasses.dataclass
class Operator:
    process: OperatorProcess
    port: int

    @property
    def pid(self) -> int:
        assert self.process.process is not None
        return self.process.process.pid


@pytest.fixture
def operator(namespace: str, tmp_path: pathlib.Path) -> Iterator[Operator]:
    process, port = start_health_operator(namespace, tmp_path)
    yield Operator(process=process, port=port)
    assert process.stop() == 0


@dataclasses.dataclass
class Attack:
    opened: int = 0
    open_now: int = 0
    open_peak: int = 0
    answered_431: int = 0  # the head is too large
    closed: int = 0  # by the server: too slow, or pushed out by newer connections
    reset: int = 0
    refused: int = 0


class Flood:
    """
    Many connections from one client, each reconnecting when closed, sending heads that never end.

    It lasts until some seconds after all of them have been opened: a slow machine
    (e.g. one with other tests running) opens them slowly, the attack still has its size.
    """

    def __init__(self, port: int, *, connections: int, seconds: float) -> None:
        self.port, self.connections, self.seconds = port, connections, seconds
        self.stats = Attack()
        self.deadline: Optional[float] = None
        self.all_opened = asyncio.Event()
        self.connecting = asyncio.Semaphore(CONNECTING)

    async def run(self) -> Attack:
        payloads = [HUGE_LINE if index % 2 else b'GET /healthz HTTP/1.1\r\n' for index in range(self.connections)]
        attackers: asyncio.Future[Any] = asyncio.gather(*(self._attack(payload) for payload in payloads))
        opened: asyncio.Future[Any] = asyncio.ensure_future(self.all_opened.wait())
        await asyncio.wait([attackers, opened], return_when=asyncio.FIRST_COMPLETED)
        self.deadline = time.monotonic() + self.seconds
        opened.cancel()
        await attackers
        return self.stats

    def _attacking(self) -> bool:
        return self.deadline is None or time.monotonic() < self.deadline

    async def _attack(self, payload: bytes) -> None:
        stats = self.stats
        while self._attacking():
            try:
                async with self.connecting:  # so that the payload follows the connection at once, as from many clients
                    reader, writer = await asyncio.open_connection('127.0.0.1', self.port)
                    writer.write(payload)
            except OSError:
                stats.refused += 1
                await asyncio.sleep(0.1)
                continue
            stats.opened += 1
            if stats.opened >= self.connections:
                self.all_opened.set()
            stats.open_now += 1
            stats.open_peak = max(stats.open_peak, stats.open_now)
            try:
                await self._hold(reader, writer)
            except OSError:
                stats.reset += 1
            finally:
                stats.open_now -= 1
                writer.transport.abort()

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Add a header line every half second, until the server closes the connection."""
        while self._attacking():
            try:
                data = await asyncio.wait_for(reader.read(65536), timeout=0.5)
            except asyncio.TimeoutError:
                writer.write(SLOW_LINE)
                continue
            self.stats.answered_431 += data.startswith(b'HTTP/1.1 431 ')
            if not data:
                self.stats.closed += 1
                break


T = TypeVar('T')


def test_a_flood_of_slow_and_huge_heads_neither_grows_the_memory_nor_stops_the_probes(
        operator: Operator) -> None:
    memory = psutil.Process(operator.pid)
    for _ in range(300):  # the server's own code and buffers in use before the baseline, as in a running pod
        ask(operator.port, b'GET /healthz HTTP/1.1\r\n\r\n')
    rss_before = memory.memory_info().rss

    def probe() -> tuple[Optional[int], float]:
        started = time.monotonic()
        response = ask(operator.port, b'GET /healthz HTTP/1.1\r\nHost: pod\r\nUser-Agent: kube-probe\r\n\r\n')
        return (response[0] if response else None), time.monotonic() - started

    rss = Sampler(lambda: memory.memory_info().rss, interval=0.05)
    probes = Sampler(probe, interval=0.2)
    rss.start()
    time.sleep(0.1)
    probes.start()
    stats = asyncio.run(Flood(operator.port, connections=ATTACKERS, seconds=ATTACK_SECONDS).run())
    statuses, times = zip(*probes.stop(), strict=True)
    rss_peak = max(rss.stop())

    print(f"\nThe attack: {stats}; the operator's RSS {rss_before / 2**20:.1f} MiB before, "
          f"{rss_peak / 2**20:.1f} MiB at the peak; {len(statuses)} probes, the slowest in {max(times):.2f}s.")
    assert stats.opened >= ATTACKERS  # it did happen, at that scale
    assert rss_peak - rss_before < RSS_GROWTH_LIMIT
    assert set(statuses) == {200}, list(zip(statuses, times, strict=True))
    assert len(statuses) >= ATTACK_SECONDS  # the probes were answered all along, not only after the attack
    after = ask(operator.port, b'GET /healthz HTTP/1.1\r\n\r\n')
    assert after == (200, b'{"static": "ok", "memo": "hello", "gate": true}')
    assert "The health endpoint has reached its limit of 256 connections" in operator.process.log  # it was hit
    assert "Traceback" not in operator.process.log
    assert operator.process.error_lines == []


def test_a_malformed_request_line_is_a_bad_request_without_a_traceback(operator: Operator) -> None:
    assert ask(operator.port, b'GET http://[::1/ HTTP/1.1\r\nHost: x\r\n\r\n') == (400, b"Bad request.\n")
    assert ask(operator.port, b'GET /healthz HTTP/1.1\r\n\r\n') is not None  # the server lives on
    log = operator.process.log
    assert "Traceback" not in log
    assert "Unhandled exception" not in log

