"""
Leases (``coordination.k8s.io/v1``): reading, acquiring, renewing and releasing one.

Replicas of an operator compete for a Lease; the one that holds it leads (see
:mod:`leadership`). The semantics are client-go's (``k8s.io/client-go/tools/leaderelection``), so
that the Lease reads the same to ``kubectl`` and to other tools:

* the holder writes its identity into ``spec.holderIdentity``, the lease's
  ``leaseDurationSeconds``, the ``acquireTime`` of its term and the
  ``renewTime`` of its last renewal (MicroTime: microseconds, UTC), and
  increments ``leaseTransitions`` whenever the holder changes;
* every write carries the ``resourceVersion`` it was based on, so of two
  replicas writing at once, one loses with a conflict (409) and re-reads;
* a candidate never trusts the clocks in the Lease: it judges the holder as
  expired when the Lease has not *changed in its own view* for the lease's
  duration (the time of the observation, on the candidate's own clock).
  A ``renewTime`` in the far future is therefore harmless: an abandoned Lease
  expires a lease duration after it was last seen to change;
* the holder's ``leaseDurationSeconds`` is believed up to
  :data:`MAX_DURATION_FACTOR` times the reader's own lease duration (a minute
  with the defaults): a Lease with ``2147483647`` (68 years) that nobody renews
  is taken over a minute after it was last seen to change, not in 68 years.
  The factor leaves room for holders whose timings differ from ours (e.g.
  during a rollout that changes them); a holder beyond it could be taken over
  before its renew deadline, which is why the callers warn about such a Lease;
* the holder renews every ``retry_period``; if it fails to renew for
  ``renew_deadline`` (shorter than the lease's duration), it stops leading
  before anyone else may take over;
* a holder that exits gracefully releases the Lease (an empty holder and a
  duration of 1 second), so that the next candidate takes over at once.

The decisions are pure functions of a Lease's record and the times
(:func:`decide`, :func:`held_spec`, :func:`released_spec`), separate from the
I/O (:func:`read_lease`, :func:`try_acquire_or_renew`, :func:`release_lease`).
Nothing here is tied to a single Lease: the same helpers serve any number of
Leases, each with its own :class:`Observation`.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import math
from typing import Any, Dict, Mapping, Optional

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import references

LEASES = references.Resource('coordination.k8s.io', 'v1', 'leases', namespaced=True)

# Another holder's Lease lasts for at most this many of the reader's own lease durations after it last changed.
MAX_DURATION_FACTOR = 4


class LeaseError(ValueError):
    """A Lease cannot be used as configured (a bad name, namespace or timing): said once, at the start."""


@dataclasses.dataclass(frozen=True)
class LeaseRef:
    """Which Lease: a namespace and a name."""
    namespace: str
    name: str

    def __str__(self) -> str:
        return f'{self.namespace}/{self.name}'


@dataclasses.dataclass(frozen=True)
class LeaseTimings:
    """client-go's three durations (seconds): the lease, the holder's renew deadline, the retry period."""
    lease_duration: float = 15
    renew_deadline: float = 10
    retry_period: float = 2

    def check(self, where: str = 'settings.leader_election') -> None:
        """Refuse timings with which two holders could overlap (client-go's rules); ``where`` names them."""
        for name in ('lease_duration', 'renew_deadline', 'retry_period'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise LeaseError(f"{where}.{name} must be a positive number of seconds, not {value!r}.")
        if not self.lease_duration > self.renew_deadline:
            raise LeaseError(
                f"{where}.lease_duration ({self.lease_duration:g}) must be longer than renew_deadline "
                f"({self.renew_deadline:g}): a holder must stop before its lease can expire elsewhere.")
        if not self.renew_deadline > self.retry_period:
            raise LeaseError(
                f"{where}.renew_deadline ({self.renew_deadline:g}) must be longer than retry_period "
                f"({self.retry_period:g}): a holder must have time to retry a failed renewal.")

    @property
    def lease_duration_seconds(self) -> int:
        """As written into the Lease (whole seconds, rounded up)."""
        return max(1, math.ceil(self.lease_duration))


@dataclasses.dataclass(frozen=True)
class LeaseRecord:
    """What a Lease says (its spec), as read; the resource version is what the next write is based on."""
    holder: str = ''
    duration: Optional[int] = None
    acquire_time: Optional[str] = None
    renew_time: Optional[str] = None
    transitions: int = 0
    resource_version: Optional[str] = None

    @classmethod
    def parse(cls, body: Mapping[str, Any]) -> LeaseRecord:
        spec = body.get('spec') or {}
        duration = spec.get('leaseDurationSeconds')
        transitions = spec.get('leaseTransitions')
        return cls(
            holder=spec.get('holderIdentity') or '',
            duration=duration if isinstance(duration, int) and not isinstance(duration, bool) else None,
            acquire_time=spec.get('acquireTime'),
            renew_time=spec.get('renewTime'),
            transitions=transitions if isinstance(transitions, int) and transitions >= 0 else 0,
            resource_version=(body.get('metadata') or {}).get('resourceVersion'),
        )

    @property
    def essence(self) -> tuple[Any, ...]:
        """What counts as a change of the Lease (a renewal changes ``renewTime``)."""
        return (self.holder, self.duration, self.acquire_time, self.renew_time, self.transitions)


@dataclasses.dataclass
class Observation:
    """
    One candidate's view of one Lease: the last record seen, and when it last changed (loop time).

    The time is the candidate's own, so that the holder's clock (or a hand-edited
    ``renewTime``) never decides when a lease expires.
    """
    record: Optional[LeaseRecord] = None
    changed_at: float = 0.0
    seen: bool = False  # whether the Lease was ever read (an absent Lease is a state too)

    def notice(self, record: Optional[LeaseRecord], *, now: float) -> bool:
        """Remember what was read; whether it is a change (then its expiry starts over)."""
        old = self.record
        changed = (not self.seen or (record is None) != (old is None) or
                   (record is not None and old is not None and record.essence != old.essence))
        if changed:
            self.changed_at = now
        self.record = record
        self.seen = True
        return changed


class Verdict(enum.Enum):
    CREATE = 'create'  # no Lease yet: create it, held by us
    ACQUIRE = 'acquire'  # free or expired: take it over
    RENEW = 'renew'  # ours: renew it
    WAIT = 'wait'  # another holder's, not expired yet


def asked_duration(record: LeaseRecord, timings: LeaseTimings) -> float:
    """The holder's lease duration as written; ours if the Lease has none or a non-positive one (hand-edited)."""
    if record.duration is not None and record.duration > 0:
        return float(record.duration)
    return timings.lease_duration


def effective_duration(record: LeaseRecord, timings: LeaseTimings) -> float:
    """How long a Lease lasts after it was last seen to change: the holder's duration, capped (see above)."""
    return min(asked_duration(record, timings), MAX_DURATION_FACTOR * timings.lease_duration)


def decide(*, observation: Observation, identity: str, now: float, timings: LeaseTimings) -> Verdict:
    """What a candidate does with a Lease as it last observed it (pure: no I/O, no clock)."""
    record = observation.record
    if record is None:
        return Verdict.CREATE
    if record.holder == identity:
        return Verdict.RENEW
    if not record.holder:
        return Verdict.ACQUIRE  # released, or never held
    if now >= observation.changed_at + effective_duration(record, timings):
        return Verdict.ACQUIRE
    return Verdict.WAIT


def expires_in(*, observation: Observation, now: float, timings: LeaseTimings) -> Optional[float]:
    """How long until another holder's lease expires in our view; ``None`` if it is not held."""
    record = observation.record
    if record is None or not record.holder:
        return None
    return max(0.0, observation.changed_at + effective_duration(record, timings) - now)


def micro_time(moment: datetime.datetime) -> str:
    """Kubernetes' MicroTime: RFC 3339 with microseconds, in UTC."""
    return moment.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def parse_micro_time(text: Optional[str]) -> Optional[datetime.datetime]:
    """A MicroTime (or a plain RFC 3339 time) as an aware datetime; ``None`` if absent or unreadable."""
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.timezone.utc)


def held_spec(
        record: Optional[LeaseRecord],
        *,
        identity: str,
        moment: datetime.datetime,
        timings: LeaseTimings,
) -> Dict[str, Any]:
    """The spec of a Lease created, acquired or renewed by ``identity`` at this wall-clock moment."""
    renewing = record is not None and record.holder == identity
    acquire_time = record.acquire_time if renewing and record is not None else None
    transitions = 0 if record is None else record.transitions + (0 if renewing else 1)
    return {
        'holderIdentity': identity,
        'leaseDurationSeconds': timings.lease_duration_seconds,
        'acquireTime': acquire_time or micro_time(moment),
        'renewTime': micro_time(moment),
        'leaseTransitions': transitions,
    }


def released_spec(record: LeaseRecord, *, moment: datetime.datetime) -> Dict[str, Any]:
    """The spec of a released Lease: no holder, expiring in a second (as client-go's ReleaseOnCancel)."""
    return {
        'holderIdentity': None,
        'leaseDurationSeconds': 1,
        'acquireTime': micro_time(moment),
        'renewTime': micro_time(moment),
        'leaseTransitions': record.transitions,
    }


async def read_lease(client: protocols.ObjectReader, ref: LeaseRef) -> Optional[LeaseRecord]:
    """The Lease's record, or ``None`` if it does not exist."""
    try:
        body = await client.get_object(LEASES, namespace=ref.namespace, name=ref.name)
    except apierrors.APINotFoundError:
        return None
    return LeaseRecord.parse(body)


async def write_lease(
        client: protocols.ObjectWriter,
        ref: LeaseRef,
        spec: Mapping[str, Any],
        *,
        based_on: Optional[LeaseRecord],
) -> LeaseRecord:
    """
    Create the Lease (if there was none) or update it, unless it has changed since ``based_on``.

    Raises :class:`APIConflictError` if another writer was first (the Lease exists
    already, or its resource version is not the one read), :class:`APINotFoundError`
    if it was deleted meanwhile (or, when creating, if its namespace does not exist).
    """
    if based_on is None:
        body: typedefs.RawBody = await client.create_object(LEASES, namespace=ref.namespace, body={
            'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
            'metadata': {'name': ref.name, 'namespace': ref.namespace},
            'spec': dict(spec),
        })
    else:
        # A resourceVersion in a merge-patch is a precondition: the API server answers 409 if it is outdated.
        body = await client.patch_object(LEASES, namespace=ref.namespace, name=ref.name, patch={
            'metadata': {'resourceVersion': based_on.resource_version},
            'spec': dict(spec),
        })
    return LeaseRecord.parse(body)


async def try_acquire_or_renew(
        client: protocols.ApiClient,
        ref: LeaseRef,
        *,
        identity: str,
        observation: Observation,
        timings: LeaseTimings,
        now: float,
        moment: datetime.datetime,
) -> bool:
    """
    One attempt to hold the Lease: whether ``identity`` holds it afterwards.

    A holder renews from its last observation without re-reading (one request);
    if that conflicts (e.g. the Lease was edited), it reads the Lease and tries
    once more. A lost race is not an error: the caller is not the holder this time.
    Raises the API's errors otherwise (e.g. 403 if not permitted).
    """
    holding = observation.record is not None and observation.record.holder == identity
    for fresh in ((False, True) if holding else (True,)):
        if fresh:
            observation.notice(await read_lease(client, ref), now=now)
        verdict = decide(observation=observation, identity=identity, now=now, timings=timings)
        if verdict == Verdict.WAIT:
            return False
        based_on = observation.record
        spec = held_spec(based_on, identity=identity, moment=moment, timings=timings)
        try:
            written = await write_lease(client, ref, spec, based_on=based_on)
        except apierrors.APIConflictError:
            continue  # somebody else wrote first: see who, and maybe try again
        except apierrors.APINotFoundError:
            if based_on is None:
                raise  # no Lease, and it cannot be created: its namespace is absent
            observation.notice(None, now=now)  # deleted meanwhile: created on the next attempt
            return False
        observation.notice(written, now=now)
        return True
    observation.notice(await read_lease(client, ref), now=now)  # lost the race: remember the winner
    return False


async def release_lease(
        client: protocols.ApiClient,
        ref: LeaseRef,
        *,
        identity: str,
        observation: Observation,
        moment: datetime.datetime,
) -> bool:
    """Give the Lease up if ``identity`` holds it (as last observed); whether it was released."""
    record = observation.record
    if record is None or record.holder != identity:
        return False
    try:
        written = await write_lease(client, ref, released_spec(record, moment=moment), based_on=record)
    except (apierrors.APIConflictError, apierrors.APINotFoundError):
        return False  # it is not ours anymore: nothing to release
    observation.notice(written, now=asyncio.get_running_loop().time())
    return True
