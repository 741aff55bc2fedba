"""
The initial listing of many objects: paginated, with the memory bounded.

Inputs: 20,000 objects created in a namespace before the operator starts; an
operator that only watches (``operators_src/event_counter.py``), so that the
listing is measured alone. Outputs: every object seen once, the listing made
in pages (counted by the API server's own request metrics), and the
operator's peak memory (reported, with a generous upper bound asserted).
"""
import asyncio
import pathlib
import re

import pytest

import kopf
import kopf_client
from integration.controlplane import Cluster, subtract_counts, sum_counts
from integration.operating import EXAMPLES, OperatorProcess

COUNTER = str(pathlib.Path(__file__).parent / 'operators_src' / 'event_counter.py')
OBJECTS = 20_000
PAGE_SIZE = 500  # settings.watching.chunk_size, as an operator with many objects sets it
PEAK_RSS_LIMIT_MIB = 200  # far above what is expected; catches holding the whole listing several times


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    cluster.kubectl('apply', '-f', str(EXAMPLES / 'crd.yaml'))
    cluster.kubectl('wait', '--for=condition=established', '--timeout=60s', 'crd/kopfexamples.kopf.dev')


async def create_many(cluster: Cluster, namespace: str, count: int) -> None:
    """Create the objects concurrently through our own client (the API server is real)."""
    if cluster.control_plane is None:
        pytest.skip("Creating 20k objects quickly needs the local control plane's token (other clusters: skip).")
    info = kopf.ConnectionInfo(server=cluster.server, token=cluster.admin_token,
                               ca_path=str(cluster.control_plane.ca_path))
    vault = kopf.Vault({'admin': info})
    client = kopf_client.driver.create_client(vault=vault, settings=kopf.OperatorSettings())
    resource = kopf.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)
    semaphore = asyncio.Semaphore(32)

    async def create(index: int) -> None:
        async with semaphore:
            body = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
                    'metadata': {'name': f'obj-{index:05d}'}, 'spec': {'index': index, 'payload': 'x' * 200}}
            await client.create_object(resource, namespace=namespace, body=body)

    try:
        await asyncio.gather(*(create(index) for index in range(count)))
    finally:
        await client.close()


def peak_rss_mib(pid: int) -> float:
    status = pathlib.Path(f'/proc/{pid}/status').read_text()
    match = re.search(r'^VmHWM:\s+(\d+) kB', status, re.MULTILINE)
    assert match, status
    return int(match.group(1)) / 1024


def test_initial_listing_of_20k_objects_is_paginated_with_bounded_memory(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    asyncio.run(create_many(cluster, namespace, OBJECTS))
    before = cluster.metrics()
    with OperatorProcess([COUNTER, '-n', namespace], log_path=tmp_path / 'op.log',
                         env={'COUNTER_CHUNK_SIZE': str(PAGE_SIZE)}) as op:
        op.wait_for(rf"Seen {OBJECTS} events\.", timeout=300)
        assert op.process is not None
        peak = peak_rss_mib(op.process.pid)
    after = cluster.metrics()

    lists = sum_counts(subtract_counts(after, before), verb='LIST', resource='kopfexamples')
    print(f"\nThe initial listing of {OBJECTS} objects: {lists} LIST requests, peak RSS {peak:.1f} MiB.")
    assert lists >= OBJECTS // PAGE_SIZE
    assert peak < PEAK_RSS_LIMIT_MIB
