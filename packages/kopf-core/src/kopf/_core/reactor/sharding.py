"""
Automatic sharding in the reactor: the options, the Leases' resolution, and the slots served.

The sharder (see ``engines.sharders``) decides which slots this replica
serves; :class:`ShardServing` makes it so: the orchestrator restarts the
watch-streams with the shard selector of the slots (the API server filters by
it where it can; elsewhere the client-side filter of ``watching`` does, with
the same hash), and :meth:`ShardServing.apply` returns only when the streams
of the old selector have stopped (their workers have finished their cycles)
and the daemons and timers of the objects of the slots given away have
stopped — only then may the sharder publish that it let go of them.
"""
from __future__ import annotations

import asyncio
import logging
import re
from typing import Callable, Collection, Optional, Tuple

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references, shards
from kopf._core.engines import indexing
from kopf._core.engines.background import daemons, stoppers
from kopf._core.engines.coordination import leadership, leases, membership, sharders, sharding
from kopf._core.reactor import inventory, options

logger = logging.getLogger('kopf.reactor.sharding')

_DNS_LABEL = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?')


def apply_sharding_options(sharding_settings: configuration.ShardingSettings, opts: options.OperatorOptions) -> None:
    """The call's options override the settings (which the startup handlers may tune later)."""
    if opts.shards is not None:
        sharding_settings.enabled = True
    if opts.shard_by is not None:
        sharding_settings.hashed_field = opts.shard_by


def resolve_sharding(
        settings: configuration.OperatorSettings,
        *,
        identity: str,
        served: Collection[references.NamespacePattern],
        clusterwide: bool,
) -> Optional[Tuple[leases.LeaseRef, str]]:
    """Our Lease and the group's prefix, as the settings say after the startup handlers; ``None`` if off."""
    config = settings.sharding
    if not config.enabled:
        return None
    if settings.leader_election.enabled:
        raise leases.LeaseError(
            "Automatic sharding and leader election cannot be combined: with sharding, every replica serves "
            "its share; with leader election, only one replica serves everything. Use one of --shards=auto "
            "and --leader-election (or settings.sharding / settings.leader_election).")
    if len(settings.watching.shard_selectors):
        raise leases.LeaseError(
            "Automatic sharding chooses the shard selectors itself: settings.watching.shard_selectors must be "
            "empty with --shards=auto (or settings.sharding.enabled); use one of them.")
    if config.hashed_field not in sharding.FIELDS:
        raise leases.LeaseError(f"settings.sharding.hashed_field must be one of {', '.join(sharding.FIELDS)}, "
                                f"not {config.hashed_field!r}.")
    prefix = config.lease_prefix if config.lease_prefix is not None else membership.default_prefix(
        settings.peering.name)
    membership.check_prefix(prefix)
    namespace = config.lease_namespace
    if namespace is None:
        try:
            namespace = leadership.detect_lease_namespace(served=served, clusterwide=clusterwide)
        except leases.LeaseError:
            raise leases.LeaseError(
                "Automatic sharding needs a namespace for its Leases: the operator is not in a pod "
                "($POD_NAMESPACE is unset, no service account is mounted) and serves no namespace by its name. "
                "Set settings.sharding.lease_namespace (or $POD_NAMESPACE).") from None
    if not isinstance(namespace, str) or len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        raise leases.LeaseError(f"settings.sharding.lease_namespace {namespace!r} is not a valid namespace name: "
                                f"use at most 63 lowercase letters, digits and '-'.")
    timings(settings).check(where='settings.sharding')
    return leases.LeaseRef(namespace=namespace, name=membership.lease_name(prefix, identity)), prefix


def timings(settings: configuration.OperatorSettings) -> leases.LeaseTimings:
    config = settings.sharding
    return leases.LeaseTimings(lease_duration=config.lease_duration, renew_deadline=config.renew_deadline,
                               retry_period=config.retry_period)


class ShardServing:
    """The slots served now, as the orchestrator's streams see them (their shard selector)."""

    def __init__(
            self,
            *,
            field: str,
            changed: asyncio.Event,
            memories: inventory.ObjectMemories,
            context_of: Callable[[daemons.DaemonsMemory], daemons.DaemonContext],
            indexers: Optional[indexing.OperatorIndexers] = None,
    ) -> None:
        self.field = field
        self.changed = changed
        self.memories = memories
        self.indexers = indexers
        self.context_of = context_of
        self.slots: sharding.Slots = frozenset()
        self._selector: Optional[str] = None  # of the slots: asked before every cycle, so computed once
        self.version = 0  # of the slots: +1 on every change
        self.applied_version = 0  # of the slots that the orchestrator's streams use now
        self.applied = asyncio.Condition()

    @property
    def idle(self) -> bool:
        """No slots: no watch-streams at all."""
        return not self.slots

    @property
    def selector(self) -> Optional[str]:
        """The shard selector of the streams (``None``: all objects, or none if idle)."""
        return self._selector

    async def apply(self, slots: sharding.Slots) -> None:
        """Serve these slots; return when those given away are not served anymore (streams, workers, daemons)."""
        lost = self.slots - slots
        self.slots = slots
        self._selector = sharding.selector(slots, field=self.field) if slots else None
        self.version += 1
        version = self.version
        self.changed.set()
        # The daemons stop while the streams' workers finish (the sooner, the better when stepping down);
        # then once more, for those spawned by the cycles that were finishing meanwhile.
        early = asyncio.create_task(self._stop_daemons(lost)) if lost else None
        try:
            async with self.applied:
                await self.applied.wait_for(lambda: self.applied_version >= version)
        finally:
            if early is not None:
                await early
        if lost:
            await self._stop_daemons(lost)
            self._forget(lost)

    async def mark_applied(self, version: int) -> None:
        """The orchestrator: the streams of this version's selector run (and the older ones have stopped)."""
        async with self.applied:
            self.applied_version = max(self.applied_version, version)
            self.applied.notify_all()

    def _forget(self, lost: sharding.Slots) -> None:
        """The objects moved to other replicas are theirs now: neither our memories nor our indices hold them."""
        field = sharding.FIELDS[self.field].rsplit('.', 1)[-1]
        forgotten = self.memories.forget_where(
            lambda memory: sharding.slot_of(getattr(memory, field)) in lost)  # their daemons have exited
        if self.indexers is not None:
            for key in forgotten:
                self.indexers.forget(key)
        if forgotten:
            logger.debug(f"Forgot {len(forgotten)} objects moved to other replicas.")

    async def _stop_daemons(self, lost: sharding.Slots) -> None:
        """Stop the daemons and timers of the objects in the slots given away; wait until they exit."""
        field = sharding.FIELDS[self.field]
        memories = [memory.daemons for memory in self.memories if memory.daemons is not None
                    and sharding.slot_of(shards.field_value(memory.daemons.body, field)) in lost]
        if memories:
            logger.debug(f"Stopping the daemons of {len(memories)} objects moved to other replicas.")
            await daemons.stop_all(memories, reason=stoppers.DaemonStoppingReason.OPERATOR_PAUSING,
                                   context_of=self.context_of, timeout=None)


def make_sharder(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        lease: Tuple[leases.LeaseRef, str],
        identity: str,
        changed: asyncio.Event,
        memories: inventory.ObjectMemories,
        context_of: Callable[[daemons.DaemonsMemory], daemons.DaemonContext],
        indexers: Optional[indexing.OperatorIndexers] = None,
) -> Tuple[ShardServing, sharders.Sharder]:
    """The served slots (for the orchestrator) and the sharder that changes them (a task to run)."""
    ref, prefix = lease
    field = settings.sharding.hashed_field
    serving = ShardServing(field=field, changed=changed, memories=memories, context_of=context_of,
                           indexers=indexers)
    member = membership.Member(client=client, ref=ref, prefix=prefix, identity=identity, field=field,
                               timings=timings(settings))
    return serving, sharders.Sharder(member=member, apply=serving.apply)
