"""
One soak from start to end: setup, workload under faults, settling, checks.

The harness runs the proxy and the faults' timetable in its own event loop,
the operator as a subprocess (``_supervisor``), and the workload directly
against the API server (``_workload``). After the soak's duration the faults
stop; the harness then waits for the workload to end and the objects to be
gone, reads the journals, and checks the invariants (``_invariants``).
"""
import asyncio
import dataclasses
import json
import pathlib
import random
import secrets
import time
from collections.abc import Mapping
from typing import Any

from integration.controlplane import ControlPlane
from integration.kubeobjects import crd_manifest

from . import _api, _invariants, _proxy, _records, _schedule
from ._resource import GROUP, KIND, PLURAL, VERSION
from ._supervisor import Supervisor
from ._workload import Observer, Workload

_CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'


@dataclasses.dataclass(frozen=True)
class SoakConfig:
    minutes: float
    objects: int
    seed: int
    workdir: pathlib.Path
    rates: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(_schedule.DEFAULT_RATES))
    updates: int = 3
    waves: int = 10
    settle_timeout: float = 600   # after the faults stop, how long the workload may take to end
    wait_timeout: float = 300     # how long one object waits for the operator to store one change
    replicas: int = 1             # more than one: sharded replicas (--shards=auto), killed one at a time

    @property
    def duration(self) -> float:
        return self.minutes * 60

    @property
    def warmup(self) -> float:
        return min(60.0, self.duration / 4)


@dataclasses.dataclass
class SoakResult:
    config: SoakConfig
    report: _invariants.Report
    schedule: list[_schedule.Fault]
    elapsed: float

    def as_json(self) -> dict[str, Any]:
        return {
            'command': dict(minutes=self.config.minutes, objects=self.config.objects, seed=self.config.seed,
                            updates=self.config.updates, rates=dict(self.config.rates),
                            replicas=self.config.replicas),
            'line': self.report.line(),
            'passed': self.report.ok,
            'elapsed_seconds': round(self.elapsed, 1),
            'scheduled_faults': len(self.schedule),
            'report': dataclasses.asdict(self.report),
        }


def run_soak(config: SoakConfig, control_plane: ControlPlane) -> SoakResult:
    return asyncio.run(_Soak(config, control_plane).run())


class _Soak:
    def __init__(self, config: SoakConfig, control_plane: ControlPlane) -> None:
        self.config = config
        self.control_plane = control_plane
        self.namespace = f'chaos-{config.seed}-{secrets.token_hex(3)}'
        config.workdir.mkdir(parents=True, exist_ok=True)
        self.runs = config.workdir / 'runs.jsonl'
        self.actions = config.workdir / 'actions.jsonl'
        self.faults = config.workdir / 'faults.jsonl'
        self.schedule = _schedule.make_schedule(config.seed, config.duration, config.rates)

    async def run(self) -> SoakResult:
        started = time.monotonic()
        cp = self.control_plane
        async with _api.Api(cp.server, cp.ca_path, cp.admin_token) as api:
            await self._prepare(api)
            proxy = _proxy.FaultProxy(cp.server, api.ssl_context, self.faults)
            kubeconfig = _write_kubeconfig(self.config.workdir / 'kubeconfig', await proxy.start(), cp.admin_token)
            supervisors = self._supervisors(kubeconfig)
            observer = Observer(api, self.namespace)
            background = [asyncio.create_task(observer.run())]
            try:
                for supervisor in supervisors:
                    supervisor.start()
                    background.append(asyncio.create_task(supervisor.watch()))
                await self._soak(api, proxy, supervisors, observer)
                leftovers = await self._leftovers(api)
                final_pid = supervisors[0].pid
                memory_warm, memory_end = supervisors[0].memory()  # sampled by watch(), before the stop
            finally:
                for task in background:
                    task.cancel()
                await asyncio.gather(*background, return_exceptions=True)
                # In threads: the proxy serves the operators' last requests (e.g. leaving the shards) meanwhile.
                await asyncio.gather(*(asyncio.to_thread(supervisor.stop) for supervisor in supervisors))
                await proxy.stop()
        evidence = _invariants.Evidence(
            runs=_records.read(self.runs), actions=_records.read(self.actions), faults=_records.read(self.faults),
            leftovers=leftovers, final_pid=final_pid, memory_warm=memory_warm, memory_end=memory_end)
        return SoakResult(self.config, _invariants.check(evidence), self.schedule, time.monotonic() - started)

    def _supervisors(self, kubeconfig: pathlib.Path) -> list[Supervisor]:
        """One operator; or several sharded replicas, each with its own log and identity."""
        sharded = self.config.replicas > 1
        return [Supervisor(namespace=self.namespace, kubeconfig=kubeconfig, runs=self.runs, journal=self.faults,
                           log_path=self.config.workdir / (f'operator-{index}.log' if sharded else 'operator.log'),
                           warmup=self.config.warmup, replica=f'replica-{index}' if sharded else None)
                for index in range(self.config.replicas)]

    async def _prepare(self, api: _api.Api) -> None:
        status, body = await api.request('POST', _CRDS, crd_manifest(GROUP, PLURAL, KIND))
        if status not in (201, 409):
            raise _api.ApiError(f'Creating the CRD answered {status}: {body}')
        deadline = time.monotonic() + 60
        while not await self._is_established(api):
            if time.monotonic() > deadline:
                raise _api.ApiError(f'The CRD of {PLURAL}.{GROUP} is not established in 60s.')
            await asyncio.sleep(0.5)
        status, body = await api.request('POST', '/api/v1/namespaces', {
            'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': self.namespace}})
        if status != 201:
            raise _api.ApiError(f'Creating the namespace answered {status}: {body}')

    async def _is_established(self, api: _api.Api) -> bool:
        status, body = await api.request('GET', f'{_CRDS}/{PLURAL}.{GROUP}')
        conditions = ((body or {}).get('status') or {}).get('conditions') or [] if status == 200 else []
        return any(c.get('type') == 'Established' and c.get('status') == 'True' for c in conditions)

    async def _soak(self, api: _api.Api, proxy: _proxy.FaultProxy, supervisors: list[Supervisor],
                    observer: Observer) -> None:
        config = self.config
        names = [f'obj-{index:05d}' for index in range(config.objects)]
        workload = Workload(api, observer, self.namespace, self.actions, updates=config.updates,
                            wait_timeout=config.wait_timeout)
        # The lives of the last wave must have begun, and mostly ended, while the faults still strike.
        spread = config.duration * 0.7
        work = asyncio.create_task(workload.run(names, spread=spread, waves=config.waves, seed=config.seed))
        await self._strike(proxy, supervisors, work)
        await asyncio.wait_for(work, timeout=config.settle_timeout)

    async def _strike(self, proxy: _proxy.FaultProxy, supervisors: list[Supervisor],
                      work: 'asyncio.Task[None]') -> None:
        """Carry out the schedule at its moments; process faults one at a time, as they take seconds."""
        started = time.monotonic()
        victims = random.Random(self.config.seed)  # which replica each kill strikes: the same for the same seed
        for fault in self.schedule:
            await asyncio.sleep(max(0.0, started + fault.at - time.monotonic()))
            if work.done():
                work.result()  # the workload failed: show why at once
            if fault.kind in _schedule.WIRE_KINDS:
                proxy.inject(fault)
            elif fault.kind == _schedule.KILL_OPERATOR:
                victims.choice(supervisors).kill()
            else:
                await self._restart(fault.kind)
        await asyncio.sleep(max(0.0, started + self.config.duration - time.monotonic()))

    async def _restart(self, kind: str) -> None:
        began = time.time()
        restart = (self.control_plane.restart_apiserver if kind == _schedule.RESTART_APISERVER
                   else self.control_plane.restart_etcd)
        await asyncio.to_thread(restart)
        _records.append(self.faults, event='fault', fault=kind, began=began)

    async def _leftovers(self, api: _api.Api) -> dict[str, list[str]]:
        status, body = await api.request('GET', f'/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{PLURAL}')
        if status != 200:
            raise _api.ApiError(f'Listing the objects answered {status}: {body}')
        return {item['metadata']['name']: item['metadata'].get('finalizers', []) for item in body['items']}


def _write_kubeconfig(path: pathlib.Path, server: str, token: str) -> pathlib.Path:
    """The operator's kubeconfig: the proxy (plain HTTP, on 127.0.0.1 only), with the admin's token."""
    config = {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'chaos',
        'clusters': [{'name': 'chaos-proxy', 'cluster': {'server': server}}],
        'users': [{'name': 'chaos-admin', 'user': {'token': token}}],
        'contexts': [{'name': 'chaos', 'context': {'cluster': 'chaos-proxy', 'user': 'chaos-admin'}}],
    }
    path.touch(mode=0o600)
    path.write_text(json.dumps(config, indent=2) + '\n')
    return path
