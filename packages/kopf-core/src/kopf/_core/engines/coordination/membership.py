"""
Automatic sharding: the membership Leases — one per replica, read by all.

Every replica holds a ``coordination.k8s.io/v1`` Lease of its own, named
``<prefix>-<hash of its identity>`` (the prefix is ``kopf-shard-<peering name>``
unless set), labelled ``kopf.zalando.org/shard-group=<prefix>`` for discovery.
It renews it as the leader election's holder does (:mod:`leases`: the same
``holderIdentity``, durations and times), and publishes in its annotations:

* ``kopf.zalando.org/shard-serving``: the slots it serves or may start any
  moment (see :mod:`sharding` for the notation). A slot is added *before* the
  replica starts it and removed only *after* it has stopped it — after its
  watch-streams, the workers and the daemons of its objects have stopped;
* ``kopf.zalando.org/shard-by``: the hashed field (``uid`` or ``namespace``).

The members are found by listing the Leases of the group, and followed by a
watch-stream of them where permitted (see :mod:`leasewatching`): a change is
then seen when it happens rather than at the next listing, and an arrival or
a departure wakes the others at once. A Lease is alive while it has a holder
and was seen to change (on the reader's own clock) within its lease's
duration, capped; a Lease that no replica would write is not a member (see
:mod:`memberjudging`). Leases dead for long (:data:`GC_DURATIONS` of their
durations) are deleted by any member; a member that exits gracefully deletes
its own.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import re
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.structs import shards
from kopf._core.engines.coordination import leases, leasewatching, memberjudging, sharding

logger = logging.getLogger('kopf.engines.membership')

LABEL = 'kopf.zalando.org/shard-group'
SERVING = 'kopf.zalando.org/shard-serving'
HASHED_FIELD = 'kopf.zalando.org/shard-by'
DEFAULT_PREFIX = 'kopf-shard-'
GC_DURATIONS = 4  # a Lease dead for this many of its durations is deleted by the live members


def default_prefix(peering_name: str) -> str:
    """``kopf-shard-<peering name>``: the peering name lowercased, other characters made '-'."""
    tail = re.sub(r'[^a-z0-9-]+', '-', peering_name.lower()).strip('-') or 'default'
    return (DEFAULT_PREFIX + tail)[:52].rstrip('-')


def check_prefix(prefix: str) -> None:
    """The prefix is the group's label value and the start of the Leases' names: a DNS label of 52 chars."""
    if not isinstance(prefix, str) or len(prefix) > 52 or not re.fullmatch(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?', prefix):
        raise leases.LeaseError(
            f"The sharding's Lease prefix {prefix!r} is not valid in Kubernetes: use at most 52 lowercase "
            f"letters, digits and '-', starting and ending with a letter or a digit (e.g. 'my-operator-shard'); "
            f"it names the replicas' Leases (<prefix>-<10 hex digits>) and labels them.")


def lease_name(prefix: str, identity: str) -> str:
    """The member's Lease: the prefix and a hash of the identity (stable for the same pod name)."""
    return f'{prefix}-{shards.hash_value(identity):016x}'[:len(prefix) + 11]


class Member:
    """One replica's membership: its own Lease (written) and the group's Leases (read)."""

    def __init__(
            self,
            *,
            client: protocols.ApiClient,
            ref: leases.LeaseRef,
            prefix: str,
            identity: str,
            field: str,
            timings: leases.LeaseTimings,
    ) -> None:
        self.client = client
        self.ref = ref
        self.prefix = prefix
        self.identity = identity
        self.field = field
        self.timings = timings
        self.own = leases.Observation()  # of our own Lease, as last written (or read on a conflict)
        self.others: Dict[str, leases.Observation] = {}
        self.said: Set[Tuple[str, str, Any]] = set()  # the oddities said once: (kind, lease, what)
        self.judge = memberjudging.Judge(namespace=ref.namespace, field=field, timings=timings,
                                         name_of=lambda holder: lease_name(prefix, holder))

    @property
    def name(self) -> str:
        return self.ref.name

    async def publish(self, claims: sharding.Slots, *, now: float, moment: datetime.datetime) -> None:
        """Create or renew our Lease with these claims; re-read once if it was changed by another writer."""
        for attempt in range(2):
            record = self.own.record
            spec = leases.held_spec(record, identity=self.identity, moment=moment, timings=self.timings)
            metadata = {'labels': {LABEL: self.prefix},
                        'annotations': {SERVING: sharding.format_slots(claims), HASHED_FIELD: self.field}}
            try:
                body = await self._write(record, spec, metadata)
            except apierrors.APIConflictError:  # edited by hand, or left by a previous run of this identity
                if record is None:
                    logger.debug(f"The sharding's Lease {self.ref} exists already (a previous run): taken over.")
                else:
                    self._say_once('rewritten', self.name, record.resource_version, logging.WARNING,
                                   f"The sharding's Lease {self.ref} was changed by another writer: it is "
                                   f"rewritten with this replica's state (it is the replica's own Lease).")
                self.own.notice(await leases.read_lease(self.client, self.ref), now=now)
                continue
            except apierrors.APINotFoundError:
                if record is None or attempt:
                    raise  # its namespace is absent: said and retried by the caller
                self.own.notice(None, now=now)  # deleted meanwhile (by hand): created again
                continue
            self.own.notice(leases.LeaseRecord.parse(body), now=now)
            return
        raise apierrors.APIConflictError({'message': f'the Lease {self.ref} keeps changing'}, status=409)

    async def _write(self, record: Optional[leases.LeaseRecord], spec: Mapping[str, Any],
                     metadata: Dict[str, Any]) -> Mapping[str, Any]:
        if record is None:
            return await self.client.create_object(leases.LEASES, namespace=self.ref.namespace, body={
                'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
                'metadata': {'name': self.ref.name, 'namespace': self.ref.namespace, **metadata},
                'spec': dict(spec)})
        metadata['resourceVersion'] = record.resource_version  # a precondition: 409 if outdated
        return await self.client.patch_object(leases.LEASES, namespace=self.ref.namespace, name=self.ref.name,
                                              patch={'metadata': metadata, 'spec': dict(spec)})

    async def survey(self, *, now: float) -> List[sharding.Peer]:
        """The other members as they are now: alive or not, and what they claim."""
        page = await self.client.list_objects(leases.LEASES, namespace=self.ref.namespace,
                                              label_selector=f'{LABEL}={self.prefix}')
        peers: List[sharding.Peer] = []
        seen: Set[str] = set()
        for body in page.items:
            name = str((body.get('metadata') or {}).get('name') or '')
            if not name or name == self.name:
                continue
            seen.add(name)
            peers.append(self._judge(name, body, now=now))
        for name in set(self.others) - seen:
            del self.others[name]
            self.judge.forget(name)
        await self._collect_garbage(peers, now=now)
        return peers

    def _judge(self, name: str, body: Mapping[str, Any], *, now: float) -> sharding.Peer:
        record = leases.LeaseRecord.parse(body)
        observation = self.others.setdefault(name, leases.Observation())
        if not leasewatching.is_older(record, observation.record):
            observation.notice(record, now=now)
        annotations = (body.get('metadata') or {}).get('annotations') or {}
        return self.judge.peer(name, observation, field=annotations.get(HASHED_FIELD),
                               text=annotations.get(SERVING), now=now)

    async def follow(self, wakeup: asyncio.Event) -> None:
        """Watch the group's Leases until cancelled; wake the sharder when a member comes, goes, or lets go."""
        def on_event(kind: str, body: Mapping[str, Any]) -> None:
            name = str((body.get('metadata') or {}).get('name') or '')
            if not name or name == self.name:
                return
            if kind == 'DELETED':
                self.others.pop(name, None)
                self.judge.forget(name)
                wakeup.set()
                return
            record = leases.LeaseRecord.parse(body)
            joined = name not in self.others  # not yet seen in a listing or in the stream
            observation = self.others.setdefault(name, leases.Observation())
            if leasewatching.is_older(record, observation.record):
                return
            observation.notice(record, now=asyncio.get_running_loop().time())
            if joined or not record.holder:
                wakeup.set()  # joined, or released its Lease: the next round decides now

        await leasewatching.follow(self.client, namespace=self.ref.namespace, what=f"the sharding's Leases in "
                                   f"{self.ref.namespace!r}", retry_period=self.timings.retry_period,
                                   label_selector=f'{LABEL}={self.prefix}', on_event=on_event)

    def next_expiry(self, *, now: float) -> Optional[float]:
        """When the first of the live members' Leases expires (as seen here), if it is not renewed meanwhile."""
        expiries = [observation.changed_at + leases.effective_duration(observation.record, self.timings)
                    for observation in self.others.values()
                    if observation.record is not None and observation.record.holder]
        return min((expiry for expiry in expiries if expiry > now), default=None)

    async def _collect_garbage(self, peers: List[sharding.Peer], *, now: float) -> None:
        """Delete the Leases of the members dead for long (e.g. killed pods): they would pile up."""
        for peer in peers:
            observation = self.others[peer.name]
            if peer.alive or observation.record is None:
                continue
            duration = leases.effective_duration(observation.record, self.timings)
            if now >= observation.changed_at + GC_DURATIONS * duration:
                try:
                    await self.client.delete_object(leases.LEASES, namespace=self.ref.namespace, name=peer.name)
                    logger.debug(f"Deleted the sharding's Lease {self.ref.namespace}/{peer.name} (dead for long).")
                except apierrors.APIError as e:
                    logger.debug(f"Failed to delete the dead Lease {self.ref.namespace}/{peer.name}: {e!r}")

    async def leave(self) -> None:
        """Delete our Lease (after everything here has stopped): the others take our slots at once."""
        try:
            await self.client.delete_object(leases.LEASES, namespace=self.ref.namespace, name=self.name)
        except (Exception, asyncio.TimeoutError) as e:
            logger.warning(f"Failed to delete the sharding's Lease {self.ref}; it expires by itself in "
                           f"{self.timings.lease_duration:g}s. The error: {e!r}")
        else:
            logger.info(f"Left the shards: deleted the Lease {self.ref}.")

    def _say_once(self, kind: str, name: str, what: Any, level: int, message: str) -> None:
        key = (kind, name, repr(what))
        if key not in self.said:
            self.said.add(key)
            logger.log(level, message)

