"""
Running the operator: the embedding API (``kopf.run``, ``kopf.operator``,
``kopf.spawn_tasks``, ``kopf.run_tasks``) and the operator's lifecycle.

The sequence: authenticate, run the startup handlers (which may tune the
settings), detect the peering mode, start observing resources and namespaces
and serving them, signal readiness; on a signal or the stop-flag, stop the
watch-streams (the per-object workers finish their current cycles), run the
cleanup handlers, and release the connections.
"""
from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import logging
import signal
from typing import Any, Collection, Dict, List, Optional, Tuple

from kopf._cogs.aiokits import aioadapters, aiostopping
from kopf._cogs.clients import drivers, protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import credentials, ephemera
from kopf._core.actions import lifecycles
from kopf._core.engines import activities, indexing
from kopf._core.engines.background import daemons, stoppers
from kopf._core.engines.coordination import leadership, leases, peering, sharders
from kopf._core.engines.endpoints import metricserving, probing
from kopf._core.engines.events import posters, posting
from kopf._core.engines.webhooks import webhookserving
from kopf._core.intents import handlers, registries
from kopf._core.reactor import (
    collecting,
    coordination,
    cycles,
    exiting,
    inventory,
    observation,
    options,
    orchestration,
    pausing,
    sharding,
    signalling,
)

logger = logging.getLogger('kopf.reactor.running')


# How long the exiting operator waits for the daemons after they are asked to stop ("hung" tasks).
HUNG_TASKS_TIMEOUT = 5.0


def _no_kwargs(*_: Any) -> Dict[str, Any]:
    raise RuntimeError("Daemons are not started while the operator is exiting.")


async def _no_patch(_: Any) -> None:
    pass


def _version() -> str:
    try:
        return importlib.metadata.version('kopf-core')
    except importlib.metadata.PackageNotFoundError:
        return 'unknown'


@options.taking(options.RunOptions)
def run(opts: options.RunOptions) -> None:
    """Run the operator in the given or a new event loop until it exits (blocking)."""
    coro = operator(**_as_kwargs(opts.operator_options()))
    own_loop = opts.loop is None
    real_loop = opts.loop if opts.loop is not None else asyncio.new_event_loop()
    collecting.tune_garbage_collection()  # the process is the operator's: see the module
    try:
        real_loop.run_until_complete(coro)
    except KeyboardInterrupt:
        pass  # the second Ctrl-C: exit without waiting for anything
    else:
        _finish_hung_tasks(real_loop)
        real_loop.run_until_complete(real_loop.shutdown_asyncgens())
    finally:
        if own_loop:
            real_loop.close()


def _as_kwargs(opts: options.OperatorOptions) -> Dict[str, Any]:
    # The options as given (not a deep copy: registries, vaults and flags are shared by design).
    return {field.name: getattr(opts, field.name) for field in dataclasses.fields(opts)}


def _finish_hung_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """
    Cancel what is left (e.g. abandoned daemons) and give it a few seconds to finish.

    Unlike ``asyncio.run()``, never wait forever: a task that ignores cancellations
    would otherwise keep the process alive until it is killed.
    """
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    pending = loop.run_until_complete(aiostopping.stop_tasks(
        tasks, title='Hung', logger=logger, timeout=HUNG_TASKS_TIMEOUT))
    if pending:
        names = ', '.join(sorted(task.get_name() for task in pending))
        logger.warning(f"Hung tasks are left behind at exit (they ignore the cancellation): {names}")


@options.taking_async(options.OperatorOptions)
async def operator(opts: options.OperatorOptions) -> None:
    """Run the operator in the current event loop until it exits (the embedding API)."""
    tasks = await spawn_tasks(**_as_kwargs(opts))
    await run_tasks(tasks)


@options.taking_async(options.OperatorOptions)
async def spawn_tasks(opts: options.OperatorOptions) -> Collection[asyncio.Task[None]]:
    """Prepare the operator and spawn its root tasks (the embedding API)."""
    operator_run = _OperatorRun(opts)
    tasks = [asyncio.create_task(operator_run.run(), name='kopf operator')]
    if opts._command is not None:
        tasks.append(asyncio.create_task(opts._command, name='the command'))
    return tasks


async def run_tasks(
        root_tasks: Collection[asyncio.Task[None]],
        *,
        ignored: Collection[asyncio.Task[object]] = frozenset(),
) -> None:
    """
    Wait for the root tasks; when one ends (or fails), stop the others; re-raise a failure.

    The operator's own task ends only when the operator exits; a command given
    with ``_command=`` stops the operator when it ends.
    """
    try:
        done, pending = await asyncio.wait(root_tasks, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        for task in root_tasks:
            task.cancel()
        await asyncio.wait(root_tasks)
        raise
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
    aiostopping.report_stopped('Root', [task for task in root_tasks if not task.done()], logger=logger)
    for task in done:
        error = None if task in ignored or task.cancelled() else task.exception()
        if error is not None:
            raise error


class _OperatorRun:
    """The operator's life from the start to the exit: one instance per operator."""

    def __init__(self, opts: options.OperatorOptions) -> None:
        self.registry = opts.registry if opts.registry is not None else registries.get_default_registry()
        self.settings = opts.settings if opts.settings is not None else configuration.OperatorSettings()
        self.driver = opts.client if opts.client is not None else drivers.find_driver()  # nothing works without
        self.liveness_endpoint = None if opts.liveness_endpoint is None else probing.parse_endpoint(
            opts.liveness_endpoint)
        self.metrics = metricserving.prepare(opts.metrics_endpoint, liveness=self.liveness_endpoint)
        self.namespaces = opts.all_namespaces
        self.clusterwide = opts.clusterwide
        if not self.clusterwide and not self.namespaces:
            logger.warning("Neither namespaces nor the cluster-wide mode are given: serving the whole cluster. "
                           "Use --all-namespaces (-A) or --namespace (-n) explicitly.")
            self.clusterwide = True
        coordination.apply_peering_options(self.settings.peering, opts, clusterwide=self.clusterwide)
        coordination.apply_leadership_options(self.settings.leader_election, opts)
        sharding.apply_sharding_options(self.settings.sharding, opts)
        self.vault = opts.vault if opts.vault is not None else credentials.Vault()
        self.memo = opts.memo if opts.memo is not None else ephemera.Memo()
        self.memories = opts.memories if opts.memories is not None else inventory.ObjectMemories()
        self.indexers = opts.indexers if opts.indexers is not None else indexing.OperatorIndexers()
        self.indexers.ensure(self.registry)
        self.insights = opts.insights if opts.insights is not None else observation.Insights()
        self.identity = opts.identity if opts.identity is not None else peering.detect_own_id()
        self.stop_flag = opts.stop_flag
        self.ready_flag = opts.ready_flag
        self.lifecycle = lifecycles.validate(opts.lifecycle)
        self.listing = probing.ListingReadiness()  # for the readiness probe
        self.stopping = asyncio.Event()
        self.operating = asyncio.Event()  # set while the objects are served (peering and leadership allow)
        self.elector: Optional[leadership.Elector] = None  # with leader election only
        self.sharder: Optional[sharders.Sharder] = None  # with automatic sharding only
        self.pauser = pausing.DaemonsPauser(memories=self.memories, operating=self.operating,
                                            context_of=self._daemon_context)
        self.ultimate_exit: Optional[asyncio.TimerHandle] = None  # armed by a signal
        self.signals = signalling.SignalCatcher(self._on_signal)

    async def run(self) -> None:
        logger.debug(f"Starting Kopf {_version()}.")
        self.signals.install()
        client = self.driver.create_client(vault=self.vault, settings=self.settings)
        background: List[asyncio.Task[Any]] = []
        try:
            if self.liveness_endpoint is not None:
                background.append(asyncio.create_task(self._guard(probing.health_reporter(
                    self.liveness_endpoint, registry=self.registry, settings=self.settings, memo=self.memo,
                    extra_kwargs=self.indexers.as_kwargs, listing=self.listing, stopping=self.stopping)),
                    name='health reporter'))
            if self.metrics is not None:
                background.append(asyncio.create_task(self._guard(self.metrics.serve()), name='metrics reporter'))
            authenticated = asyncio.Event()
            background.append(asyncio.create_task(self._guard(activities.authenticator(
                registry=self.registry, settings=self.settings, vault=self.vault, driver=self.driver,
                memo=self.memo, ready=authenticated)), name='credentials retriever'))
            await self._until_stopped_or(authenticated.wait())
            if not self.stopping.is_set():
                await self._run_startup()
            if not self.stopping.is_set():
                webhookserving.check_setup(registry=self.registry, settings=self.settings)
                election = coordination.resolve_leader_election(
                    self.settings, served=self.namespaces, clusterwide=self.clusterwide)
                shard_lease = sharding.resolve_sharding(self.settings, identity=self.identity,
                                                        served=self.namespaces, clusterwide=self.clusterwide)
                background.extend(await self._spawn_serving(client, election, shard_lease))
                aioadapters.raise_flag(self.ready_flag)
                await self._until_stopped_or()
        finally:
            await self._stop_daemons()
            await aiostopping.stop_tasks(background[::-1], title='Core', logger=logger)
            await self._hand_over()
            self.signals.remove()
            try:
                await activities.run_activity(activity=handlers.Activity.CLEANUP, registry=self.registry,
                                              settings=self.settings, memo=self.memo,
                                              extra_kwargs=self.indexers.as_kwargs())
            finally:
                await client.close()
                if self.ultimate_exit is not None:  # exited in time: an embedding loop goes on unharmed
                    self.ultimate_exit.cancel()
        # Re-raise the failures of the background tasks (e.g. a failed authentication).
        for task in background:
            error = task.exception() if task.done() and not task.cancelled() else None
            if error is not None:
                raise error

    async def _run_startup(self) -> None:
        """Run the startup handlers, unless the operator is asked to stop meanwhile (e.g. while retrying)."""
        startup = asyncio.ensure_future(activities.run_activity(
            activity=handlers.Activity.STARTUP, registry=self.registry, settings=self.settings,
            memo=self.memo, extra_kwargs=self.indexers.as_kwargs()))
        await self._until_stopped_or(startup)
        if startup.cancelled():
            logger.warning("Startup activity is only partially executed due to cancellation.")
        else:
            startup.result()  # re-raise the activity's failure, if any

    async def _spawn_serving(
            self,
            client: protocols.ApiClient,
            election: Optional[Tuple[leases.LeaseRef, leases.LeaseTimings]] = None,
            shard_lease: Optional[Tuple[leases.LeaseRef, str]] = None,
    ) -> List[asyncio.Task[Any]]:
        context = cycles.ProcessingContext(
            registry=self.registry, settings=self.settings, client=client,
            memories=self.memories, memo=self.memo, indexers=self.indexers, lifecycle=self.lifecycle)
        readiness = indexing.IndexingReadiness(self.indexers)
        tasks: List[asyncio.Task[Any]] = []
        event_queue: asyncio.Queue[posting.K8sEvent] = asyncio.Queue(maxsize=posting.QUEUE_LIMIT)
        posting.bind(event_queue=event_queue, settings=self.settings)
        posting.install_poster_handler()
        tasks.append(asyncio.create_task(self._guard(posters.poster(
            event_queue=event_queue, client=client, settings=self.settings)), name='poster of events'))
        tasks.append(asyncio.create_task(self._guard(observation.resource_observer(
            client=client, settings=self.settings, registry=self.registry, insights=self.insights)),
            name='resource observer'))
        tasks.append(asyncio.create_task(self._guard(observation.namespace_observer(
            client=client, settings=self.settings, clusterwide=self.clusterwide,
            patterns=self.namespaces, insights=self.insights)), name='namespace observer'))
        gate = coordination.OperatingGate(operating=self.operating, changed=self.insights.changed,
                                          on_pause=self.pauser.pause)
        peered = gate.consent()
        tasks.append(asyncio.create_task(self._guard(self._coordinate(client, peered)), name='peering'))
        if election is not None:
            ref, timings = election
            self.elector = leadership.Elector(client=client, ref=ref, identity=self.identity, timings=timings,
                                              leading=gate.consent())
            tasks.append(asyncio.create_task(self._guard(self.elector.run()), name='leader election'))
        shards: Optional[sharding.ShardServing] = None
        if shard_lease is not None:
            shards, self.sharder = sharding.make_sharder(
                client=client, settings=self.settings, lease=shard_lease, identity=self.identity,
                changed=self.insights.changed, memories=self.memories, context_of=self._daemon_context,
                indexers=self.indexers)
            tasks.append(asyncio.create_task(self._guard(self.sharder.run()), name='automatic sharding'))
        tasks.append(asyncio.create_task(self._guard(orchestration.orchestrator(
            context=context, settings=self.settings, insights=self.insights, readiness=readiness,
            operating=self.operating, listing=self.listing, shards=shards, entitled=self._entitled)),
            name='multidimensional multitasker'))
        if webhookserving.is_needed(self.registry):  # admission or conversion handlers
            tasks.append(asyncio.create_task(self._guard(webhookserving.serve_admission(
                registry=self.registry, settings=self.settings, client=client, memo=self.memo,
                memo_of=self.memories.find_memo, indices=self.indexers.as_kwargs())), name='admission webhooks'))
        return tasks

    def _entitled(self) -> bool:
        """Whether the Leases (if any) are renewed in time: else no cycle may start, even before stepping down."""
        return ((self.elector is None or self.elector.renewed())
                and (self.sharder is None or self.sharder.renewed()))

    async def _coordinate(self, client: protocols.ApiClient, operating: coordination.Consent) -> None:
        await self.insights.ready_namespaces.wait()
        namespaces = [namespace for namespace in self.insights.namespaces if namespace is not None]
        await coordination.coordinate(client=client, settings=self.settings, identity=self.identity,
                                      namespaces=namespaces, operating=operating, changed=self.insights.changed)

    async def _stop_daemons(self) -> None:
        """Stop the daemons and timers of all objects, gracefully first (within a limit)."""
        memories = [memory.daemons for memory in self.memories if memory.daemons is not None]
        if not memories:
            return
        await daemons.stop_all(memories, reason=stoppers.DaemonStoppingReason.OPERATOR_EXITING,
                               context_of=self._daemon_context, timeout=HUNG_TASKS_TIMEOUT)

    def _daemon_context(self, memory: daemons.DaemonsMemory) -> daemons.DaemonContext:
        """For stopping only: the daemons' own contexts are with their objects' cycles."""
        return daemons.DaemonContext(settings=self.settings, logger=logger, memo=self.memo,
                                     build_kwargs=_no_kwargs, apply_patch=_no_patch, pending_fns=[])

    async def _hand_over(self) -> None:
        """Once nothing handles the objects anymore: release the Lease (leader election), leave the shards."""
        await self.pauser.close()
        if self.elector is None and self.sharder is None:
            return
        await self._stop_daemons()  # any spawned by the cycles that were still finishing after the first stop
        if self.elector is not None:
            await self.elector.release()
        if self.sharder is not None:
            await self.sharder.leave()

    async def _guard(self, coro: Any) -> None:
        """Run a background coroutine; a failure stops the whole operator (and is re-raised)."""
        try:
            await coro
        except asyncio.CancelledError:
            task = asyncio.current_task()
            logger.debug(f"{task.get_name().capitalize() if task else 'A task'} is cancelled.")
            raise
        except BaseException:
            self.stopping.set()
            raise

    async def _until_stopped_or(self, *coros: Any) -> None:
        """Wait for the coroutines, or until the operator is asked to stop (or fails)."""
        waiters = [asyncio.ensure_future(coro) for coro in coros]
        waiters.append(asyncio.ensure_future(self.stopping.wait()))
        waiters.append(asyncio.ensure_future(self._wait_stop_flag()))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.wait(waiters)

    async def _wait_stop_flag(self) -> None:
        if self.stop_flag is None:
            await asyncio.Event().wait()
        result = await aioadapters.wait_flag(self.stop_flag)
        if result is None:
            logger.info("Stop-flag is raised. Operator is stopping.")
        else:
            logger.info(f"Stop-flag is set to {result!r}. Operator is stopping.")
        self.stopping.set()

    def _on_signal(self, sig: signal.Signals) -> None:
        logger.info(f"Signal {sig.name} is received. Operator is stopping.")
        if self.ultimate_exit is None:  # the countdown of a stuck exit starts with the first signal
            self.ultimate_exit = exiting.arm_ultimate_exit(self.settings)
        self.stopping.set()
        if sig == signal.SIGINT:
            # The second Ctrl-C exits at once (the default handler raises KeyboardInterrupt).
            self.signals.release(signal.SIGINT)
