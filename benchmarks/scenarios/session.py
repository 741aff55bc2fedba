"""
One side's session in one fresh namespace: its operator process, the object tracker, the phases.

A phase is: the harness acts (creates, updates, deletes), waits until the
handlers' results are visible (the phase's wall time), then until the operator
is idle; the CPU time and the operator's requests are the differences across
the whole phase, so that late bookkeeping requests are counted too.
"""
import asyncio
import dataclasses
import pathlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks import metrics
from benchmarks.cluster import BenchCluster, Variant, discard_namespace
from benchmarks.kubeapi import KubeApi
from benchmarks.sides import OperatorProcess, Side
from benchmarks.tracker import ObjectState, ObjectTracker

Condition = Callable[[dict[str, ObjectState]], bool]
Figures = dict[str, Any]
MIB = 1024 * 1024


class PhaseTimeout(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Settings:
    quiet: float = 3.0  # seconds with no requests from the operator to call it idle
    timeout: float = 120.0  # for one phase, on top of the per-object allowance
    timeout_per_object: float = 0.3
    concurrency: int = 50  # the harness's requests in flight when it creates/updates/deletes in bulk
    poll: float = 1.0  # how often /metrics is read while waiting for idleness (it is megabytes)
    # Whether the framework sides post their log messages as k8s-events (settings.posting.loggers):
    # set the same on both sides, so that they do the same work; None leaves each side's own default.
    posting_loggers: bool | None = False

    def timeout_for(self, objects: int) -> float:
        return self.timeout + self.timeout_per_object * objects


class Session:
    def __init__(self, cluster: BenchCluster, api: KubeApi, *, side: Side, variant: Variant, namespace: str,
                 logs_dir: pathlib.Path, settings: Settings) -> None:
        self.cluster = cluster
        self.api = api
        self.side = side
        self.variant = variant
        self.namespace = namespace
        self.logs_dir = logs_dir
        self.settings = settings
        self.tracker = ObjectTracker(api, variant.plural, namespace)
        self.operator: OperatorProcess | None = None
        self.log_path = logs_dir / f'{namespace}.log'
        self.before_start: metrics.Snapshot | None = None

    async def __aenter__(self) -> 'Session':
        await self.api.create_namespace(self.namespace)
        await self.tracker.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        try:
            await self.stop_operator()
        finally:
            await self.tracker.stop()
            await discard_namespace(self.api, self.variant, self.namespace, concurrency=self.settings.concurrency)

    # --- The operator ---

    def operator_env(self) -> dict[str, str]:
        env = self.cluster.operator_env(self.variant)
        if self.settings.posting_loggers is not None:
            env['KOPF_BENCH_POSTED_LOGS'] = 'true' if self.settings.posting_loggers else 'false'
        return env

    async def start_operator(self) -> OperatorProcess:
        """Start the side's process; the snapshot of the moment before is kept for ``idle(require_requests)``."""
        self.before_start = await metrics.take_snapshot(self.api)
        operator = OperatorProcess(self.side, namespace=self.namespace, plural=self.variant.plural,
                                   env=self.operator_env(), log_path=self.log_path)
        operator.start()
        self.operator = operator
        return operator

    async def stop_operator(self) -> None:
        operator, self.operator = self.operator, None
        if operator is not None:
            code = await asyncio.to_thread(operator.stop)
            if code is None:
                raise RuntimeError(f'The {self.side.name} operator did not stop on SIGINT and was killed:\n'
                                   f'{operator.log_tail()}')

    @property
    def running(self) -> OperatorProcess:
        if self.operator is None:
            raise RuntimeError('The operator is not started.')
        return self.operator

    # --- Waiting ---

    async def until(self, condition: Condition, *, timeout: float) -> float:
        """Wait until the objects are as expected; return when that became true; fail early if the operator dies."""
        deadline = time.monotonic() + timeout
        while True:
            if self.operator is not None:
                self.operator.check_alive()
            try:
                return await self.tracker.wait_for(condition, timeout=min(1.0, max(0.0, deadline - time.monotonic())))
            except asyncio.TimeoutError:
                if time.monotonic() >= deadline:
                    counts = _summarize_states(self.tracker.states)
                    raise PhaseTimeout(f'The objects are not as expected after {timeout:.0f}s: {counts}') from None

    async def idle(self, condition: Condition = lambda _: True, *, timeout: float,
                   require_requests: bool = False) -> float:
        """Wait until the operator is idle; return the time of its last activity."""
        def holds() -> bool:
            self.running.check_alive()
            return condition(self.tracker.states)
        return await metrics.wait_idle(
            self.api, quiet=self.settings.quiet, timeout=timeout, condition=holds, poll=self.settings.poll,
            activity=lambda: self.tracker.last_event_time, cpu=self.running.cpu_seconds,
            require_requests=require_requests, since=self.before_start)

    async def phase(self, action: Callable[[], Awaitable[object]], condition: Condition, *, objects: int) -> Figures:
        """Act, wait for the results and for idleness; the figures of the whole phase."""
        operator = self.running
        timeout = self.settings.timeout_for(objects)
        before = await metrics.take_snapshot(self.api)
        cpu_before, server_cpu_before = operator.cpu_seconds(), self.cluster.server_cpu_seconds()
        started = time.monotonic()
        await action()
        acted = time.monotonic()
        done = await self.until(condition, timeout=timeout)
        last_activity = await self.idle(condition, timeout=timeout)
        cpu_after, server_cpu_after = operator.cpu_seconds(), self.cluster.server_cpu_seconds()
        after = await metrics.take_snapshot(self.api)
        return {
            'wall_s': done - started,
            'action_s': acted - started,  # the harness's own requests: slower while the operator loads the server
            'until_idle_s': max(done, last_activity) - started,
            'cpu_s': cpu_after - cpu_before,
            'server_cpu_s': server_cpu_after - server_cpu_before,
            'requests': metrics.attribute(before, after),
        }


def peak_rss_mib(operator: OperatorProcess) -> float:
    return operator.peak_rss_bytes() / MIB


def _summarize_states(states: dict[str, ObjectState]) -> dict[str, int]:
    return {
        'objects': len(states),
        'created': sum(state.created for state in states.values()),
        'updated': sum(state.updated_field is not None for state in states.values()),
        'deleting': sum(state.deleting for state in states.values()),
    }
