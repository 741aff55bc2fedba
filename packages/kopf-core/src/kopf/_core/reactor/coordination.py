"""
Coordination with other operators: runs the peering (see ``engines.peering``).

It decides the mode once at the start (standalone or peering), then keeps the
keep-alives going and follows the peering object's watch-stream, toggling
``operating``: set while this operator may serve the resources.

With leader election (see ``engines.leadership``), the peering is not the only
party to decide: :class:`OperatingGate` sets ``operating`` only while every
party consents (the peering, and the Lease held), so ``kopf freeze`` still
pauses the leader, and a follower serves nothing even when the peering allows.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Collection, Dict, List, Optional, Tuple

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.engines.coordination import leadership, leases, peering
from kopf._core.reactor import options, watching

logger = logging.getLogger('kopf.reactor.peering')


def apply_peering_options(
        peering_settings: configuration.PeeringSettings,
        opts: options.OperatorOptions,
        *,
        clusterwide: bool,
) -> None:
    """The peering options of the call override the settings (which the startup handlers may tune)."""
    if opts.standalone is not None:
        peering_settings.standalone = opts.standalone
    if opts.priority is not None:
        peering_settings.priority = opts.priority
    if opts.peering_name is not None:
        peering_settings.name = opts.peering_name
        peering_settings.mandatory = True
    peering_settings.clusterwide = clusterwide


def apply_leadership_options(
        election_settings: configuration.LeaderElectionSettings,
        opts: options.OperatorOptions,
) -> None:
    """The leader election's options of the call override the settings; the names given are checked now."""
    if opts.leader_election is not None:
        election_settings.enabled = bool(opts.leader_election)
    if isinstance(opts.leader_election, str):
        election_settings.lease_name = opts.leader_election
    if opts.leader_election_namespace is not None:
        election_settings.lease_namespace = opts.leader_election_namespace
    if election_settings.enabled and election_settings.lease_name is not None:
        leadership.check_lease_name(election_settings.lease_name)
    if election_settings.enabled and election_settings.lease_namespace is not None:
        leadership.check_lease_namespace(election_settings.lease_namespace)


def resolve_leader_election(
        settings: configuration.OperatorSettings,
        *,
        served: Collection[references.NamespacePattern],
        clusterwide: bool,
) -> Optional[Tuple[leases.LeaseRef, leases.LeaseTimings]]:
    """The Lease to compete for, as the settings say after the startup handlers; ``None`` if off."""
    election = settings.leader_election
    if not election.enabled:
        given = [f'{name}={getattr(election, name)!r}' for name in ('lease_name', 'lease_namespace')
                 if getattr(election, name) is not None]
        if given:
            logger.warning(f"Leader election is off, so settings.leader_election's {', '.join(given)} "
                           f"is not used: set settings.leader_election.enabled = True (or --leader-election).")
        return None
    return leadership.resolve_lease(settings, served=served, clusterwide=clusterwide)


class OperatingGate:
    """
    ``operating`` is set while every party consents, cleared as soon as one withdraws.

    Each party gets its own :class:`Consent`, an event that it sets and clears
    as it would ``operating`` alone; the gate follows every change at once (no
    task in between), wakes the orchestrator via ``changed`` when ``operating``
    flips, and calls ``on_pause`` when the operator stops operating.
    """

    def __init__(self, *, operating: asyncio.Event, changed: asyncio.Event, on_pause: Callable[[], None]) -> None:
        self.operating = operating
        self.changed = changed
        self.on_pause = on_pause
        self.consents: List[Consent] = []

    def consent(self) -> Consent:
        consent = Consent(self)
        self.consents.append(consent)
        return consent

    def reconsider(self) -> None:
        allowed = bool(self.consents) and all(consent.is_set() for consent in self.consents)
        if allowed == self.operating.is_set():
            return
        if allowed:
            self.operating.set()
        else:
            self.operating.clear()
            self.on_pause()
        self.changed.set()


class Consent(asyncio.Event):
    """One party's consent to operating: an event that the gate follows (see :class:`OperatingGate`)."""

    def __init__(self, gate: OperatingGate) -> None:
        super().__init__()
        self._gate = gate

    def set(self) -> None:
        super().set()
        self._gate.reconsider()

    def clear(self) -> None:
        super().clear()
        self._gate.reconsider()


async def coordinate(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        identity: str,
        namespaces: Collection[references.Namespace],
        operating: asyncio.Event,
        changed: asyncio.Event,
) -> None:
    """
    Run the peering until cancelled; or set ``operating`` and return in the standalone mode.

    ``changed`` is set whenever ``operating`` flips, for the orchestrator to follow.
    """
    if settings.peering.standalone:
        operating.set()
        changed.set()
        return
    scopes = [None] if settings.peering.clusterwide else list(namespaces)
    targets = await peering.find_targets(client=client, settings=settings, scopes=scopes)
    if not targets:
        if settings.peering.name == 'default':
            logger.warning("Default peering object is not found, falling back to the standalone mode.")
        else:
            logger.warning(f"Peering object {settings.peering.name!r} is not found, "
                           f"falling back to the standalone mode.")
        settings.peering.standalone = True
        operating.set()
        changed.set()
        return

    paused: Dict[peering.PeeringTarget, bool] = {target: False for target in targets}
    tasks: List[asyncio.Task[None]] = []
    try:
        for target in targets:
            tasks.append(asyncio.create_task(peering.keepalive(
                client=client, settings=settings, identity=identity, target=target)))
            tasks.append(asyncio.create_task(_observe(
                client=client, settings=settings, identity=identity, target=target,
                paused=paused, operating=operating, changed=changed)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        await asyncio.shield(peering.disappear(client=client, identity=identity, targets=targets))


async def _observe(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        identity: str,
        target: peering.PeeringTarget,
        paused: Dict[peering.PeeringTarget, bool],
        operating: asyncio.Event,
        changed: asyncio.Event,
) -> None:
    async for event in watching.continuous_watch(client=client, settings=settings,
                                                 resource=target.resource, namespace=target.namespace):
        body = event.get('object', {})
        if body.get('metadata', {}).get('name') != target.name or event.get('type') == 'DELETED':
            continue
        await peering.react(client=client, settings=settings, identity=identity, target=target, body=body,
                            paused=paused, operating=operating, changed=changed)
