"""
The cluster side of the benchmarks: the local control plane, the CRDs, namespaces and objects.

Every session gets a fresh namespace so that no side sees another side's
objects; objects left with finalizers (a failed side) are released by the
harness so that their namespace can go away.
"""
import asyncio
import dataclasses
import functools
import json
import pathlib
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable

import psutil

from benchmarks.kubeapi import KubeApi
from kopf_testing.controlplane import ControlPlane, read_kubernetes_version

CRDS_FILE = pathlib.Path(__file__).resolve().parent / 'crds.yaml'
PAYLOAD = 'x' * 200  # a spec of a realistic size, not an empty one
SERVER_PROCESSES = ('etcd', 'kube-apiserver')  # what serves the requests (the controller manager does not)


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    plural: str
    kind: str
    status_subresource: bool


VARIANTS = {
    'status': Variant('status', 'benchmarkeds', 'Benchmarked', status_subresource=True),
    'plain': Variant('plain', 'benchmarkplains', 'BenchmarkPlain', status_subresource=False),
}


class BenchCluster:
    """The started control plane with the CRDs applied; a context manager that stops it."""

    def __init__(self, root_dir: pathlib.Path) -> None:
        self.control_plane = ControlPlane(root_dir)

    def __enter__(self) -> 'BenchCluster':
        self.control_plane.start()
        try:
            self.kubectl('apply', '-f', str(CRDS_FILE))
            for variant in VARIANTS.values():
                self.kubectl('wait', '--for=condition=established', '--timeout=60s',
                             f'crd/{variant.plural}.bench.kopf.dev')
        except BaseException:
            self.control_plane.stop()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.control_plane.stop()

    def server_cpu_seconds(self) -> float:
        """
        The user+system CPU time of kube-apiserver and etcd so far.

        On a machine of few cores, the API server is what limits an operator's
        wall time: its CPU per object shows the load that each side puts on it.
        """
        total = 0.0
        for name, pid in self.control_plane.pids.items():
            if name in SERVER_PROCESSES:
                times = psutil.Process(pid).cpu_times()
                total += times.user + times.system
        return total

    def kubectl(self, *args: str) -> str:
        argv = [str(self.control_plane.kubectl_path), '--kubeconfig', str(self.control_plane.kubeconfig), *args]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

    def api(self) -> KubeApi:
        return KubeApi(self.control_plane.server, token=self.control_plane.admin_token,
                       ca_path=str(self.control_plane.ca_path))

    def operator_env(self, variant: Variant) -> dict[str, str]:
        """What an operator process needs to reach the cluster: a kubeconfig, or (bare) the plain values."""
        return {
            'KUBECONFIG': str(self.control_plane.token_kubeconfig),
            'BENCH_SERVER': self.control_plane.server,
            'BENCH_TOKEN': self.control_plane.admin_token,
            'BENCH_CA': str(self.control_plane.ca_path),
            'BENCH_STATUS_SUBRESOURCE': '1' if variant.status_subresource else '0',
        }

    def describe(self) -> dict[str, str]:
        versions = json.loads(self.kubectl('version', '-o', 'json'))
        return {
            'kubernetes': read_kubernetes_version(),
            'server': str(versions.get('serverVersion', {}).get('gitVersion', '')),
        }


def object_name(index: int) -> str:
    return f'obj-{index:05d}'


def object_body(variant: Variant, index: int, field: str) -> dict[str, object]:
    return {
        'apiVersion': 'bench.kopf.dev/v1',
        'kind': variant.kind,
        'metadata': {'name': object_name(index)},
        'spec': {'field': field, 'index': index, 'payload': PAYLOAD},
    }


async def run_concurrently(calls: Iterable[Callable[[], Awaitable[object]]], *, concurrency: int) -> None:
    """Run the calls with at most ``concurrency`` of them in flight, as a burst of API requests."""
    semaphore = asyncio.Semaphore(concurrency)

    async def limited(call: Callable[[], Awaitable[object]]) -> None:
        async with semaphore:
            await call()

    await asyncio.gather(*(limited(call) for call in calls))


async def create_objects(api: KubeApi, variant: Variant, namespace: str, count: int, *,
                         field: str, concurrency: int) -> list[str]:
    bodies = [object_body(variant, index, field) for index in range(count)]
    await run_concurrently((functools.partial(api.create, variant.plural, namespace, body) for body in bodies),
                           concurrency=concurrency)
    return [object_name(index) for index in range(count)]


async def update_objects(api: KubeApi, variant: Variant, namespace: str, names: list[str], *,
                         field: str, concurrency: int) -> None:
    patch = {'spec': {'field': field}}
    await run_concurrently((functools.partial(api.patch, variant.plural, namespace, n, patch) for n in names),
                           concurrency=concurrency)


async def delete_objects(api: KubeApi, variant: Variant, namespace: str, names: list[str], *,
                         concurrency: int) -> None:
    await run_concurrently((functools.partial(api.delete, variant.plural, namespace, n) for n in names),
                           concurrency=concurrency)


async def discard_namespace(api: KubeApi, variant: Variant, namespace: str, *, concurrency: int) -> None:
    """Delete everything without any operator: release the finalizers, then delete the namespace."""
    await api.delete_collection(variant.plural, namespace)
    items, _ = await api.list(variant.plural, namespace)
    release = {'metadata': {'finalizers': None}}
    await run_concurrently(
        (functools.partial(api.patch, variant.plural, namespace, item['metadata']['name'], release) for item in items),
        concurrency=concurrency)
    await api.delete_namespace(namespace)
    await wait_namespace_gone(api, namespace)


async def wait_namespace_gone(api: KubeApi, namespace: str, *, timeout: float = 120.0) -> None:
    """
    Wait until the namespace controller has finished with the namespace.

    It lists and deletes every kind of resource in it, which the API server
    counts as requests: that must not happen while the next side is measured.
    """
    deadline = time.monotonic() + timeout
    while await api.namespace_exists(namespace):
        if time.monotonic() > deadline:
            raise TimeoutError(f'The namespace {namespace} is not deleted after {timeout}s.')
        await asyncio.sleep(0.5)
