"""
Automatic sharding's cost per replica: watch events received, peak RSS and CPU with 1, 2 and 3 replicas.

From the repository's root (it starts a local control plane of its own)::

    hatch run integration:python -m benchmarks.sharding --objects 300 --out benchmarks/results/sharding

The same N objects are served by 1, 2 and 3 ``kopf run --shards=auto``
replicas of ``integration/operators_src/sharding.py`` (a create handler), each
behind a proxy of its own that counts the watch events it receives
(``integration/watchcounting.py``). After the replicas have settled and handled
every object, every object is patched once; the measured window runs from the
first patch until no replica has received an event for 3 seconds. Figures per
replica: the watch events received in the window (the patches' events), the
same per object, peak RSS (``VmHWM``), and CPU seconds in the window.
Server-side: the ``ShardedListAndWatch`` gate on (Kubernetes 1.36+; the pinned
1.37.2 has it, alpha and off by default), the API server sends each replica only
its objects; client-side: the gate off, every replica receives every event and
drops the others' objects. A mode that cannot run (a release without the gate)
is said and skipped.
"""
import argparse
import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from integration.chaos import _api
from integration.chaos._harness import _write_kubeconfig
from integration.controlplane import ControlPlane
from integration.kubeobjects import crd_manifest
from integration.operating import REPO_ROOT, kopf_executable
from integration.watchcounting import CountingProxy
from kopf._core.engines.coordination import membership, sharding

OPERATOR = REPO_ROOT / 'integration' / 'operators_src' / 'sharding.py'
GROUP, PLURAL, KIND = 'shard.kopf.dev', 'shardthings', 'ShardThing'
QUIET = 3.0  # seconds without events that end the measured window


async def _settled(api: _api.Api, namespace: str, count: int) -> bool:
    _, body = await api.request('GET', f'/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases'
                                       f'?labelSelector={membership.LABEL}%3Dkopf-shard-default')
    leases = [item for item in body['items'] if item['spec'].get('holderIdentity')]
    if len(leases) != count:
        return False
    assigned = sharding.assign(item['metadata']['name'] for item in leases)
    return all(sharding.parse_slots(item['metadata']['annotations'].get(membership.SERVING, '?'))
               == assigned[item['metadata']['name']] for item in leases)


def _cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _peak_rss_mib(pid: int) -> float:
    for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
    return 0.0


async def _created(calls: pathlib.Path, count: int) -> bool:
    text = await asyncio.to_thread(calls.read_text)
    return sum('"create"' in line for line in text.splitlines()) >= count


async def measure(cp: ControlPlane, api: _api.Api, *, replicas: int, objects: int, workdir: pathlib.Path,
                  mode: str) -> list[dict[str, Any]]:
    """One run: a namespace with the objects, the replicas started, settled, then every object patched once."""
    namespace = f'bench-shards-{mode}-{replicas}-{os.urandom(3).hex()}'
    await api.request('POST', '/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace',
                                                     'metadata': {'name': namespace}})
    base = f'/apis/{GROUP}/v1/namespaces/{namespace}/{PLURAL}'
    await asyncio.gather(*(api.request('POST', base, {'apiVersion': f'{GROUP}/v1', 'kind': KIND,
                                                      'metadata': {'name': f'obj-{i:05d}'}, 'spec': {}})
                           for i in range(objects)))
    calls = workdir / f'{namespace}.calls'
    calls.touch()
    proxies, processes = [], []
    for index in range(replicas):
        proxy = CountingProxy(cp.server, api.ssl_context, workdir / f'{namespace}-{index}.journal', plural=PLURAL)
        kubeconfig = _write_kubeconfig(workdir / f'{namespace}-{index}.kubeconfig', await proxy.start(),
                                       cp.admin_token)
        # The Leases' default timings: the short ones of the tests flap under a burst on 2 cores.
        env = dict(os.environ, KUBECONFIG=str(kubeconfig), CALLS_FILE=str(calls), POD_ID=f'r{index}')
        processes.append(_spawn(workdir / f'{namespace}-{index}.log', namespace, env))
        proxies.append(proxy)
    try:
        await _until(lambda: _settled(api, namespace, replicas), timeout=120)
        await _until(lambda: _created(calls, objects), timeout=300)
        await asyncio.sleep(QUIET)
        before = [(proxy.received, _cpu_seconds(process.pid))
                  for proxy, process in zip(proxies, processes, strict=True)]
        started = time.monotonic()
        await asyncio.gather(*(api.request('PATCH', f'{base}/obj-{i:05d}', {'spec': {'value': 1}},
                                           content_type='application/merge-patch+json') for i in range(objects)))
        await _quiet(proxies)
        window = time.monotonic() - started - QUIET
        return [{'mode': mode, 'replicas': replicas, 'replica': index, 'objects': objects,
                 'events': proxy.received - events, 'events_per_object': round((proxy.received - events) / objects, 2),
                 'cpu_seconds': round(_cpu_seconds(process.pid) - cpu, 2),
                 'peak_rss_mib': round(_peak_rss_mib(process.pid), 1), 'window_seconds': round(window, 1)}
                for index, (proxy, process, (events, cpu)) in enumerate(zip(proxies, processes, before, strict=True))]
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        for proxy in proxies:
            await proxy.stop()
        await api.request('DELETE', f'/api/v1/namespaces/{namespace}')


def _spawn(log_path: pathlib.Path, namespace: str, env: dict[str, str]) -> 'subprocess.Popen[bytes]':
    with log_path.open('wb') as log:
        return subprocess.Popen([kopf_executable(), 'run', str(OPERATOR), '--standalone', '-n', namespace,
                                 '--shards=auto'], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT)


async def _until(check: Any, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f'Not reached in {timeout}s: {check}')
        await asyncio.sleep(0.5)


async def _quiet(proxies: list[CountingProxy]) -> None:
    last, still = [-1], 0.0
    while still < QUIET:
        counts = [proxy.received for proxy in proxies]
        still = still + 0.5 if counts == last else 0.0
        last = counts
        await asyncio.sleep(0.5)


async def run_mode(mode: str, objects: int, workdir: pathlib.Path) -> list[dict[str, Any]]:
    gates = {'ShardedListAndWatch': True} if mode == 'server-side' else {}
    rows: list[dict[str, Any]] = []
    with ControlPlane(workdir / f'controlplane-{mode}', feature_gates=gates) as cp:
        async with _api.Api(cp.server, cp.ca_path, cp.admin_token) as api:
            await api.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
                              crd_manifest(GROUP, PLURAL, KIND))
            await asyncio.sleep(3)  # established
            for replicas in (1, 2, 3):
                rows.extend(await measure(cp, api, replicas=replicas, objects=objects, workdir=workdir, mode=mode))
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ['| mode | replicas | replica | events received | per object | CPU s | peak RSS MiB |',
             '|---|---|---|---|---|---|---|']
    lines += [f"| {r['mode']} | {r['replicas']} | {r['replica']} | {r['events']} | {r['events_per_object']} | "
              f"{r['cpu_seconds']} | {r['peak_rss_mib']} |" for r in rows]
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m benchmarks.sharding', description=__doc__.split('\n\n')[0])
    parser.add_argument('--objects', type=int, default=300)
    parser.add_argument('--modes', default='client-side,server-side')
    parser.add_argument('--out', type=pathlib.Path, default=None, help='a path without suffix: .json and .md')
    args = parser.parse_args(argv)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='kopf-bench-shards-'))
    rows: list[dict[str, Any]] = []
    for mode in args.modes.split(','):
        try:
            rows.extend(asyncio.run(run_mode(mode, args.objects, workdir)))
        except Exception as e:  # e.g. the release lacks the gate: said, and the other mode goes on
            print(f'{mode}: not measured: {e!r}', file=sys.stderr)
    print(table(rows))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix('.json').write_text(json.dumps(rows, indent=2) + '\n')
        args.out.with_suffix('.md').write_text(table(rows) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
