"""
A replay of the security issue's findings 1 and 2 against a live operator, with the health probes timed.

Run it from the repository's root; it starts a local control plane of its own and stops it::

    hatch run bench:python -m benchmarks.attacks                       # both findings, 60 seconds
    hatch run bench:python -m benchmarks.attacks --findings 2 --seconds 30
    hatch run bench:python -m benchmarks.attacks --kopf-core-src /tmp/old/packages/kopf-core/src  # another kopf-core

The operator (``attacks_operator.py``: a sub-handler per item of the spec) runs as
``kopf run --liveness --metrics`` on 127.0.0.1, on asyncio's own loop (uvloop hidden, as in
the benchmarks' asyncio rows). First, 20 objects of 100 items each are handled. Then, for
``--seconds``:

- finding 2: a new object of 100 new items every second (the oldest deleted beyond 20);
  every 2 seconds, a burst of 200 ``GET /metrics`` opened and closed at once; 8 scrapers
  that scrape ``/metrics`` one after another without a pause;
- finding 1: every second, an object is patched with a packed diff-base annotation that
  unpacks into 16 MiB of ``{},{},...`` (and without the plain one, so that it is read).

Meanwhile, a process of its own requests ``/healthz`` every 0.2 s (one at a time, as a kubelet does, with a
10 s timeout) and samples the operator's RSS. Printed: the latencies of ``/healthz`` (median,
95th percentile, max) and its failures, the RSS at the start, its peak and the growth, and the
scrapes' figures. All traffic goes to 127.0.0.1; everything is bounded in count and in time.
"""
import argparse
import asyncio
import base64
import dataclasses
import gzip
import http.client
import multiprocessing
import os
import pathlib
import socket
import statistics
import subprocess
import tempfile
import time
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as StopEvent
from typing import Optional

import psutil
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.cluster import BenchCluster
from benchmarks.kubeapi import KubeApi
from kopf_testing import OperatorProcess

HERE = pathlib.Path(__file__).resolve().parent
OPERATOR = HERE / 'attacks_operator.py'
WITHOUT_UVLOOP = HERE / 'without_uvloop'
PLURAL = 'benchmarkplains'
NAMESPACE = 'attacks'

OBJECTS = 20  # alive at once
ITEMS = 100  # per object: a sub-handler each
BURST = 200  # GET /metrics opened and closed at once
SCRAPERS = 8
PROBE_INTERVAL = 0.2
PROBE_TIMEOUT = 10.0
PACKED_KEY = 'kopf.zalando.org/last-handled-configuration-packed'
PLAIN_KEY = 'kopf.zalando.org/last-handled-configuration'
UNPACKED_LIMIT = 16 * 1024 * 1024  # what the operator unpacks at most: the attack's size
CONFIGS = 'packages/kopf-core/src/kopf/_cogs/configs/'


@dataclasses.dataclass
class Figures:
    latencies: list[float] = dataclasses.field(default_factory=list)
    failures: int = 0
    rss: list[int] = dataclasses.field(default_factory=list)
    scrapes: int = 0
    scrape_failures: int = 0
    scrape_max: float = 0.0
    bursts: int = 0
    objects_made: int = 0
    newest: int = OBJECTS - 1  # the newest object's index: the warm-up's last one at first
    hostile_patches: int = 0
    cpu_seconds: float = 0.0  # the operator's, during the attack
    load: float = 0.0  # the machine's load average (1 minute) at the end: how shared the CPUs were


def hostile_annotation() -> str:
    """A packed diff-base: gzip+base64 of ``{"spec":{"items":[{},{},...]}}``, 16 MiB unpacked, ~22 KB packed."""
    head, tail = '{"spec":{"items":[', '{}]}}'
    count = (UNPACKED_LIMIT - len(head) - len(tail)) // 3
    plain = (head + '{},' * count + tail).encode()
    return 'v1:gzip+base64:' + base64.b64encode(gzip.compress(plain, mtime=0)).decode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port: int = sock.getsockname()[1]
        return port


def probe_and_sample(port: int, pid: int, stop: StopEvent, results: Connection) -> None:
    """
    In a process of its own: ``/healthz`` every 0.2 s, one at a time, and the operator's RSS at each.

    Not in a thread of the attacking process: its time would include the waits for the attack's GIL.
    """
    figures = Figures()
    process = psutil.Process(pid)
    while not stop.is_set():
        started = time.monotonic()
        try:
            connection = http.client.HTTPConnection('127.0.0.1', port, timeout=PROBE_TIMEOUT)
            connection.request('GET', '/healthz')
            ok = connection.getresponse().status == 200
            connection.close()
        except OSError:
            ok = False
        latency = time.monotonic() - started
        figures.latencies.append(latency)
        figures.failures += 0 if ok else 1
        figures.rss.append(process.memory_info().rss)
        stop.wait(max(0.0, PROBE_INTERVAL - latency))
    results.send((figures.latencies, figures.failures, figures.rss))


async def get(port: int, path: str, *, timeout: float = PROBE_TIMEOUT) -> bytes:
    reader, writer = await asyncio.wait_for(asyncio.open_connection('127.0.0.1', port), timeout)
    try:
        writer.write(f'GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'.encode())
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


async def open_and_close(port: int) -> None:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection('127.0.0.1', port), PROBE_TIMEOUT)
    except (OSError, asyncio.TimeoutError):
        return
    writer.write(b'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    writer.close()


async def bursts(port: int, deadline: float, figures: Figures) -> None:
    while time.monotonic() < deadline:
        await asyncio.gather(*[open_and_close(port) for _ in range(BURST)])
        figures.bursts += 1
        await asyncio.sleep(2.0)


async def scraper(port: int, deadline: float, figures: Figures) -> None:
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            response = await get(port, '/metrics')
            ok = response.startswith(b'HTTP/1.1 200 ')
        except (OSError, asyncio.TimeoutError):
            ok = False
        figures.scrape_max = max(figures.scrape_max, time.monotonic() - started)
        figures.scrapes += 1
        figures.scrape_failures += 0 if ok else 1
        if not ok:
            await asyncio.sleep(0.1)  # e.g. refused while busy: do not spin


def object_body(index: int) -> dict[str, object]:
    return {'apiVersion': 'bench.kopf.dev/v1', 'kind': 'BenchmarkPlain', 'metadata': {'name': f'obj-{index:04d}'},
            'spec': {'items': [f'o{index}i{item}' for item in range(ITEMS)]}}


async def churn(api: KubeApi, deadline: float, figures: Figures) -> None:
    """A new object of new items every second; the oldest one deleted beyond the 20 alive."""
    while time.monotonic() < deadline:
        index = figures.newest + 1
        await api.create(PLURAL, NAMESPACE, object_body(index))
        await api.delete(PLURAL, NAMESPACE, f'obj-{index - OBJECTS:04d}')
        figures.newest = index
        figures.objects_made += 1
        await asyncio.sleep(1.0)


async def hostile_patches(api: KubeApi, deadline: float, figures: Figures) -> None:
    """Every second, an alive object gets the packed diff-base of 16 MiB (and loses the plain one)."""
    value = hostile_annotation()
    while time.monotonic() < deadline:
        name = f'obj-{figures.newest:04d}'  # alive for the next 20 seconds at least
        patch = {'metadata': {'annotations': {PACKED_KEY: value, PLAIN_KEY: None, 'replay': str(time.time())}}}
        await api.patch(PLURAL, NAMESPACE, name, patch)
        figures.hostile_patches += 1
        await asyncio.sleep(1.0)


def handler_series(text: str) -> tuple[float, set[str]]:
    """The runs of create_fn's sub-handlers (under any label), and the handler labels seen."""
    runs, labels = 0.0, set()
    for family in text_string_to_metric_families(text):
        if family.name == 'kopf_handler_runs':
            for sample in family.samples:
                handler = sample.labels['handler']
                labels.add(handler)
                runs += sample.value if handler.startswith('create_fn/') else 0
    return runs, labels


async def scrape_text(port: int) -> str:
    response = await get(port, '/metrics', timeout=60)
    return response.partition(b'\r\n\r\n')[2].decode()


async def warm_up(api: KubeApi, metrics_port: int) -> None:
    """The first 20 objects, handled: their 2,000 sub-handlers' runs are counted."""
    await api.create_namespace(NAMESPACE)
    for index in range(OBJECTS):
        await api.create(PLURAL, NAMESPACE, object_body(index))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            text = await scrape_text(metrics_port)
            runs, labels = handler_series(text)
        except (OSError, asyncio.TimeoutError, ValueError):
            runs = 0
        if runs >= OBJECTS * ITEMS:
            print(f"After the warm-up: {len(labels)} handler labels, {len(text.encode()) / 1024:.1f} KiB of exposition")
            return
        await asyncio.sleep(1.0)
    raise RuntimeError("The first objects were not handled in 3 minutes.")


async def attack(api: KubeApi, ports: tuple[int, int], findings: set[str], seconds: float,
                 figures: Figures) -> None:
    _, metrics_port = ports
    deadline = time.monotonic() + seconds
    tasks = []
    if '2' in findings:
        tasks += [churn(api, deadline, figures), bursts(metrics_port, deadline, figures)]
        tasks += [scraper(metrics_port, deadline, figures) for _ in range(SCRAPERS)]
    if '1' in findings:
        tasks.append(hostile_patches(api, deadline, figures))
    await asyncio.gather(*tasks)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float('nan')


def report(figures: Figures, baseline: int, findings: set[str], seconds: float) -> None:
    mib = 1024 * 1024
    print(f"Replayed findings {','.join(sorted(findings))} for {seconds:.0f} s.")
    print(f"/healthz: {len(figures.latencies)} probes, median {statistics.median(figures.latencies):.3f} s, "
          f"p95 {percentile(figures.latencies, 0.95):.3f} s, max {max(figures.latencies):.3f} s, "
          f"{figures.failures} failed or timed out ({PROBE_TIMEOUT:.0f} s)")
    print(f"RSS: {baseline / mib:.1f} MiB at the start, peak {max(figures.rss) / mib:.1f} MiB, "
          f"growth {(max(figures.rss) - baseline) / mib:.1f} MiB, at the end {figures.rss[-1] / mib:.1f} MiB")
    print(f"Scrapes: {figures.scrapes} by {SCRAPERS} scrapers ({figures.scrape_failures} failed), the slowest "
          f"{figures.scrape_max:.3f} s; {figures.bursts} bursts of {BURST} opened and closed at once")
    print(f"Objects made: {figures.objects_made} ({ITEMS} items each); hostile patches: {figures.hostile_patches}")
    print(f"The operator's CPU: {figures.cpu_seconds:.1f} s in {seconds:.0f} s; the machine's load average: "
          f"{figures.load:.1f} on {os.cpu_count()} CPUs")


def operator_env(cluster: BenchCluster, kopf_core_src: Optional[str]) -> dict[str, str]:
    paths = [str(WITHOUT_UVLOOP)] + ([kopf_core_src] if kopf_core_src else [])
    return {'KUBECONFIG': str(cluster.control_plane.token_kubeconfig), 'PYTHONPATH': os.pathsep.join(paths)}


async def replay(cluster: BenchCluster, work_dir: pathlib.Path, args: argparse.Namespace) -> None:
    findings = set(args.findings.split(','))
    ports = free_port(), free_port()
    process = OperatorProcess([str(OPERATOR), '--standalone', '-n', NAMESPACE,
                               f'--liveness=http://127.0.0.1:{ports[0]}/healthz',
                               f'--metrics=http://127.0.0.1:{ports[1]}/metrics'],
                              log_path=work_dir / 'operator.log', env=operator_env(cluster, args.kopf_core_src))
    async with cluster.api() as api:
        process.start()
        try:
            await warm_up(api, ports[1])
            assert process.process is not None
            figures, spawning = Figures(), multiprocessing.get_context('spawn')
            stop, (receiver, sender) = spawning.Event(), spawning.Pipe(duplex=False)
            operator = psutil.Process(process.process.pid)
            baseline, cpu_before = operator.memory_info().rss, sum(operator.cpu_times()[:2])
            prober = spawning.Process(target=probe_and_sample, args=(ports[0], process.process.pid, stop, sender))
            prober.start()
            try:
                await attack(api, ports, findings, args.seconds, figures)
            finally:
                stop.set()
                figures.latencies, figures.failures, figures.rss = receiver.recv()
                prober.join()
            figures.cpu_seconds = sum(operator.cpu_times()[:2]) - cpu_before
            figures.load = os.getloadavg()[0]
            report(figures, baseline, findings, args.seconds)
            await report_exposition(ports[1])
        finally:
            stop_operator(process)
    print(f"The operator's log: {work_dir / 'operator.log'}")


async def report_exposition(port: int) -> None:
    try:
        exposition = await scrape_text(port)
    except (OSError, asyncio.TimeoutError):
        print("At the end: the exposition was not served within 60 s.")
        return
    _, labels = handler_series(exposition)
    print(f"At the end: the exposition {len(exposition.encode()) / 1024:.1f} KiB, {len(labels)} handler labels "
          f"({', '.join(sorted(labels)[:4])}{', ...' if len(labels) > 4 else ''})")


def stop_operator(process: OperatorProcess) -> None:
    try:
        process.stop(timeout=60)
    except AssertionError:  # kopf-testing's words for "did not stop in time": it is killed by now
        print("The operator did not stop within 60 s of its SIGINT: it was killed.")


def git(command: str, *args: str) -> str:
    """A git command's output: a commit as its hash and the start of its subject."""
    if command == 'log':
        args = ('--format=%h %<(60,trunc)%s', *args)
    return subprocess.run(['git', command, *args], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--findings', default='1,2', help="which to replay: 1, 2, or 1,2 (default)")
    parser.add_argument('--seconds', type=float, default=60.0)
    parser.add_argument('--kopf-core-src', default=None, help="a kopf-core's src/ to run the operator with")
    parser.add_argument('--work-dir', default=None, help="the control plane's state and the operator's log")
    args = parser.parse_args()
    work_dir = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix='kopf-attacks-'))
    work_dir.mkdir(parents=True, exist_ok=True)
    print(f"kopf-core: {args.kopf_core_src or 'the working tree'}; the working tree at {git('log', '-1')}")
    # Finding 1's fix is in the diff-base's modules: whether it is there, committed or not, when replayed.
    print(f"Its diff-base modules: last changed in {git('log', '-1', '--', CONFIGS)}; "
          f"uncommitted: {git('status', '--short', '--', CONFIGS).replace(chr(10), ', ') or 'none'}")
    with BenchCluster(work_dir / 'cluster') as cluster:
        asyncio.run(replay(cluster, work_dir, args))


if __name__ == '__main__':
    main()
