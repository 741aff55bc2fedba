"""
Peering: several operators of the same kind learn about each other and yield.

Each operator writes a keep-alive into the peering object's status — its
identity with its priority, lifetime and last-seen time — and watches the
object. While another live operator has a higher priority, this one pauses
(it stops serving the resources); operators with the same priority all pause,
as they cannot decide who goes first — unless shard selectors are configured
(``settings.watching.shard_selectors``), where they are taken for the other
shards and all keep working, as in Kopf 1.45.2. Dead entries (not renewed within their
lifetime) are removed by whoever notices them. ``kopf freeze`` is an ordinary
entry with a high priority; ``kopf resume`` removes it.

With no peering object (``default`` unless named otherwise), the operator runs
standalone; with ``--peering``/``settings.peering.mandatory``, it waits until
the peering object exists. The reactor runs the watch-stream of the peering
object and feeds its events to :func:`react`.

An unavailable API (5xx, 429, network errors after the client's retries) never
ends the operator: every peering request is logged and retried with backoff
(see :mod:`kopf._cogs.aiokits.aioretries`), the operator staying as it was.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import getpass
import logging
import os
import random
import socket
import string
from typing import Any, Collection, Dict, List, Mapping, Optional

from kopf._cogs.aiokits import aioretries
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references

logger = logging.getLogger('kopf.reactor.peering')

CLUSTER_PEERINGS = [
    references.Resource('kopf.dev', 'v1', 'clusterkopfpeerings', namespaced=False),
    references.Resource('zalando.org', 'v1', 'clusterkopfpeerings', namespaced=False),  # legacy
]
NAMESPACED_PEERINGS = [
    references.Resource('kopf.dev', 'v1', 'kopfpeerings', namespaced=True),
    references.Resource('zalando.org', 'v1', 'kopfpeerings', namespaced=True),  # legacy
]
MANDATORY_POLLING_INTERVAL = 10.0


def detect_own_id(*, manual: bool = False) -> str:
    """``$POD_ID`` if set, else ``user@host``, plus a timestamp and a suffix for running operators."""
    pod_id = os.environ.get('POD_ID')
    if pod_id:
        return pod_id
    user, host = getpass.getuser(), socket.getfqdn()
    if manual:
        return f'{user}@{host}'
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%d%H%M%S')
    suffix = ''.join(random.choices(string.ascii_lowercase + string.digits, k=3))
    return f'{user}@{host}/{now}/{suffix}'


@dataclasses.dataclass(frozen=True)
class Peer:
    identity: str
    priority: int = 0
    lifetime: int = 60
    lastseen: Optional[str] = None

    def __repr__(self) -> str:
        return (f"<Peer {self.identity}: priority={self.priority}, lifetime={self.lifetime}, "
                f"lastseen={self.lastseen!r}>")

    @classmethod
    def parse(cls, identity: str, entry: Mapping[str, Any]) -> Peer:
        return cls(identity=identity, priority=int(entry.get('priority', 0)),
                   lifetime=int(entry.get('lifetime', 60)), lastseen=entry.get('lastseen'))

    def is_dead(self, now: datetime.datetime) -> bool:
        if self.lastseen is None:
            return True
        try:
            seen = datetime.datetime.fromisoformat(self.lastseen)
        except ValueError:
            return True
        if seen.tzinfo is None:
            seen = seen.replace(tzinfo=datetime.timezone.utc)
        return seen + datetime.timedelta(seconds=self.lifetime) <= now


@dataclasses.dataclass(frozen=True)
class PeeringTarget:
    resource: references.Resource
    namespace: references.Namespace
    name: str

    def __str__(self) -> str:
        where = 'cluster-wide' if self.namespace is None else f'in {self.namespace!r}'
        return f'{self.name!r} {where}'


async def find_target(
        *,
        client: protocols.ApiClient,
        name: str,
        namespace: references.Namespace,
) -> Optional[PeeringTarget]:
    """The peering object of this name in this scope (the current API group first), if it exists."""
    candidates = CLUSTER_PEERINGS if namespace is None else NAMESPACED_PEERINGS
    for resource in candidates:
        try:
            await client.get_object(resource, namespace=namespace, name=name)
        except (apierrors.APINotFoundError, apierrors.APIForbiddenError):
            continue
        return PeeringTarget(resource=resource, namespace=namespace, name=name)
    return None


async def find_targets(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        scopes: Collection[references.Namespace],
) -> List[PeeringTarget]:
    outage = aioretries.Outage(what=f"find the peering object {settings.peering.name!r}",
                               meanwhile="the operator waits before serving anything")
    while True:
        found = [await aioretries.persist(outage, functools.partial(
                     find_target, client=client, name=settings.peering.name, namespace=scope))
                 for scope in scopes]
        targets = [target for target in found if target is not None]
        if not settings.peering.mandatory or len(targets) == len(scopes):
            return targets
        missing = [scope for scope, target in zip(scopes, found, strict=True) if target is None]
        where = ', '.join('cluster-wide' if s is None else repr(s) for s in missing)
        logger.warning(f"The peering object {settings.peering.name!r} is mandatory, but it is absent "
                       f"({where}). The operator is paused until it exists.")
        await asyncio.sleep(MANDATORY_POLLING_INTERVAL)


async def keepalive(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        identity: str,
        target: PeeringTarget,
) -> None:
    outage = aioretries.Outage(what=f"renew the keep-alive in the peering object {target}",
                               meanwhile="the operator keeps its current pause or operation")
    while True:
        entry = {'priority': settings.peering.priority, 'lifetime': settings.peering.lifetime,
                 'lastseen': datetime.datetime.now(datetime.timezone.utc).isoformat()}
        try:
            await client.patch_object(target.resource, namespace=target.namespace, name=target.name,
                                      patch={'status': {identity: entry}})
            outcome = 'ok'
        except apierrors.APINotFoundError:
            outcome = 'not found'
        except Exception as e:  # 5xx, 429, the network after the client's retries: never fatal
            await outage.wait(e)
            continue
        outage.over()
        if not settings.peering.stealth:
            logger.debug(f"Keep-alive in {target}: {outcome}.")
        lifetime = settings.peering.lifetime
        await asyncio.sleep(max(1, lifetime - random.randint(5, 10)))


async def react(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        identity: str,
        target: PeeringTarget,
        body: Mapping[str, Any],
        paused: Dict[PeeringTarget, bool],
        operating: asyncio.Event,
        changed: Optional[asyncio.Event] = None,
) -> None:
    """React to the peering object's new state: forget the dead peers, pause or resume."""
    now = datetime.datetime.now(datetime.timezone.utc)
    peers = [Peer.parse(key, value) for key, value in (body.get('status') or {}).items()
             if isinstance(value, Mapping)]
    dead = [peer for peer in peers if peer.is_dead(now) and peer.identity != identity]
    if dead:
        try:
            await _forget(client=client, target=target, identities=[peer.identity for peer in dead])
        except Exception as e:  # the dead entries are still there on the next event: forgotten then
            logger.error(f"Failed to remove the dead peers from {target}; retrying on its next change. "
                         f"The error: {e!r}")
    others = [peer for peer in peers if peer.identity != identity and not peer.is_dead(now)]
    ours = settings.peering.priority
    higher = [peer for peer in others if peer.priority > ours]
    same = [peer for peer in others if peer.priority == ours]
    was_paused = any(paused.values())
    if higher:
        paused[target] = True
        if not was_paused:
            logger.info(f"Pausing operations in favour of {higher}.")
    elif same and not settings.watching.shard_selectors:
        # With shard selectors, the same-priority peers are presumably the other shards: all keep working.
        paused[target] = True
        if not was_paused:
            logger.warning(f"Possibly conflicting operators with the same priority: {same}.")
    else:
        paused[target] = False
        if was_paused and not any(paused.values()):
            logger.info("Resuming operations after the pause. "
                        "Conflicting operators with the same priority are gone.")
    was_operating = operating.is_set()
    if any(paused.values()):
        operating.clear()
    else:
        operating.set()
    if changed is not None and was_operating != operating.is_set():
        changed.set()  # wake up whoever follows the operating state (the orchestrator)


async def _forget(*, client: protocols.ApiClient, target: PeeringTarget, identities: Collection[str]) -> None:
    try:
        await client.patch_object(target.resource, namespace=target.namespace, name=target.name,
                                  patch={'status': {identity: None for identity in identities}})
    except apierrors.APINotFoundError:
        pass


async def disappear(*, client: protocols.ApiClient, identity: str, targets: Collection[PeeringTarget]) -> None:
    """On exit: remove our own entry, so that others do not wait for it to expire."""
    for target in targets:
        try:
            await _forget(client=client, target=target, identities=[identity])
        except Exception as e:  # the exit continues regardless
            logger.debug(f"Failed to remove the keep-alive from {target}: {e!r}")
