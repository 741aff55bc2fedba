"""
Forged diff-bases on the objects of a real operator (security issue §1, §5): ``kopf run --liveness=URL``.

Inputs: the operator ``operators_src/health_probes.py`` (a creation handler, and ``--liveness`` on
127.0.0.1); three objects that it has handled, then patched by someone who may patch them:
Kopf's diff-base removed and a packed one put instead, 11 KiB of gzip that unpacks into 8 MiB
of ``{},{},…`` (2.8 million empty dicts); a fourth object whose diff-base is 90,000 ``[``.
Meanwhile, a thread requests ``/healthz`` as a kubelet does, and another one samples the
operator's RSS (psutil, on its PID). Then, a new object is created.
Outputs: the times and statuses of the probes, the operator's RSS growth, the objects as the
operator leaves them, and its log. Nothing is mocked: the operator runs as users run it.

Before the bounds, the packed diff-base was parsed whole on the event loop: with three such
objects, a probe waited 22.7 s and the operator grew from 72 to 1,056 MiB (now: under 0.1 s, and
under 1 MiB: the unpacking stops after the first 100,000 containers); the deep one raised
``RecursionError`` in every attempt, so that object was never handled.
"""
import base64
import functools
import gzip
import pathlib
import socket
import time
from collections.abc import Iterator
from typing import Optional, TypeVar

import psutil
import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import (
    DIFFBASE,
    apply_crds,
    crd_manifest,
    create_object,
    get_object,
    merge_patch,
    object_log_lines,
    poll,
)
from integration.operating import OperatorProcess
from integration.probes import Sampler, start_health_operator

GROUP = 'health.kopf.dev'
RESOURCE = f'healthobjs.{GROUP}'
PACKED = f'{DIFFBASE}-packed'
BOMB = 'v1:gzip+base64:' + base64.b64encode(gzip.compress(
    b'{"spec":[' + b'{},' * (8 * 1024 * 1024 // 3 - 10) + b'{}]}', 9)).decode('ascii')
DEEP = '[' * 90_000
PROBE_TIMEOUT = 60.0  # long enough to see how long the stalled loop of the unbounded parsing makes it wait
PROBE_LIMIT = 2.0  # seconds: a kubelet's default probe timeout is 1 s; some slack for a busy machine
RSS_GROWTH_LIMIT = 50 * 1024 * 1024  # a few MiB of text unpacked; not hundreds of MiB of dicts

T = TypeVar('T')


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'healthobjs', 'HealthObj'))


def probe(port: int) -> tuple[Optional[int], float]:
    """The status of ``/healthz`` (``None`` if there is no answer) and the seconds it took."""
    started = time.monotonic()
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=PROBE_TIMEOUT) as sock:
            sock.sendall(b'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
            response = b''
            while chunk := sock.recv(65536):
                response += chunk
    except OSError:
        return None, time.monotonic() - started
    status = int(response.split(b' ', 2)[1]) if response else None
    return status, time.monotonic() - started


@pytest.fixture
def operator(namespace: str, tmp_path: pathlib.Path) -> Iterator[tuple[OperatorProcess, int]]:
    process, port = start_health_operator(namespace, tmp_path)
    yield process, port
    assert process.stop() == 0


def restored(cluster: Cluster, namespace: str, name: str) -> bool:
    """Whether the object has Kopf's diff-base again, and no packed one: the operator has stored its own."""
    annotations = get_object(cluster, namespace, RESOURCE, name)['metadata'].get('annotations', {})
    return DIFFBASE in annotations and annotations[DIFFBASE].startswith('{') and PACKED not in annotations


def created(cluster: Cluster, namespace: str, process: OperatorProcess, name: str, times: int) -> bool:
    """Whether the object's creation handler has run so many times, and its diff-base is stored since."""
    handled = object_log_lines(process.log, namespace, name).count("Created.")
    return handled >= times and restored(cluster, namespace, name)


def wait_until_created(cluster: Cluster, namespace: str, process: OperatorProcess, name: str, times: int) -> None:
    def handled() -> bool:
        """The object is handled as a new one so many times, and has Kopf's diff-base since."""
        return created(cluster, namespace, process, name, times)
    poll(handled, timeout=60)


def test_forged_diffbases_neither_stall_nor_grow_the_operator_and_are_replaced(
        cluster: Cluster, namespace: str, operator: tuple[OperatorProcess, int]) -> None:
    process, port = operator
    assert process.process is not None
    memory = psutil.Process(process.process.pid)
    bombed, deep = ['bombed-1', 'bombed-2', 'bombed-3'], 'deep'
    for name in [*bombed, deep]:
        create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': 'HealthObj',
                                           'metadata': {'name': name}, 'spec': {'field': 'value'}})
    for name in [*bombed, deep]:
        wait_until_created(cluster, namespace, process, name, 1)

    rss_before = memory.memory_info().rss
    probes = Sampler(lambda: probe(port), interval=0.1)
    rss = Sampler(lambda: memory.memory_info().rss, interval=0.05)
    probes.start()
    rss.start()
    try:
        for name in bombed:
            forged = {'metadata': {'annotations': {DIFFBASE: None, PACKED: BOMB}}}
            merge_patch(cluster, namespace, RESOURCE, name, forged)
        merge_patch(cluster, namespace, RESOURCE, deep, {'metadata': {'annotations': {DIFFBASE: DEEP}}})
        for name in bombed:
            poll(functools.partial(restored, cluster, namespace, name), timeout=120)
        create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': 'HealthObj',
                                           'metadata': {'name': 'after'}, 'spec': {'field': 'value'}})
        wait_until_created(cluster, namespace, process, 'after', 1)
    finally:
        results = probes.stop()
        rss_peak = max(rss.stop())

    slowest = max(duration for _, duration in results)
    print(f"\n{len(results)} probes, the slowest in {slowest:.2f}s; the operator's RSS "
          f"{rss_before / 2**20:.1f} MiB before, {rss_peak / 2**20:.1f} MiB at the peak.")
    assert all(status == 200 for status, _ in results)
    assert slowest < PROBE_LIMIT
    assert rss_peak - rss_before < RSS_GROWTH_LIMIT

    # Without a diff-base, each object is handled as a new one (as with a broken diff-base), once.
    for name in [*bombed, deep]:
        wait_until_created(cluster, namespace, process, name, 2)
    for name in bombed:
        warnings = [line for line in object_log_lines(process.log, namespace, name) if "is ignored" in line]
        assert warnings == [f"The last-handled configuration in the annotation {PACKED} is ignored: it has more "
                            f"than 100,000 containers ({{}} and []), which no real one has; it may be forged by "
                            f"whoever can patch the object. The object is handled as if it had none."]
    warnings = [line for line in object_log_lines(process.log, namespace, deep) if "is ignored" in line]
    assert len(warnings) == 1 and "it is nested deeper than 200 levels" in warnings[0]
    assert "Traceback" not in process.log and "RecursionError" not in process.log
