"""
Automatic sharding: what a replica believes of the other members' Leases.

Only the replicas of the group should write its Leases (see the RBAC in
``docs/scaling.md``), but a Lease is an ordinary object: whoever may write
Leases in the namespace can make one with the group's label, or edit one.
Such a Lease must not stop the real replicas for long, nor silently:

* **The durations are capped**: a Lease is alive for its ``leaseDurationSeconds``
  after it was last seen to change, but for no more than
  :data:`leases.MAX_DURATION_FACTOR` times this replica's own lease duration (as
  the leader election's Lease, see :func:`leases.effective_duration`). A Lease with ``2147483647`` (68 years)
  that nobody renews is dead a minute after it was last seen to change (with the
  defaults), not in 68 years. The factor leaves room for replicas whose timings
  differ from ours (e.g. during a rollout that changes them), up to four times
  ours; a replica beyond the cap could be taken over before its renew deadline,
  so such a Lease is warned about.
* **A member's Lease must be one that a replica writes**: its name is
  ``<prefix>-<hash of its holder>``, its ``shard-serving`` annotation is in the
  slots' notation exactly as a replica writes it, its ``shard-by`` is a known
  field. Any other Lease is not a member: it is not counted in the split and
  its claims are ignored, with a warning naming it. That risks nothing that
  its writer could not do anyway by deleting a replica's Lease; a replica's own
  Lease edited by hand is rewritten by its replica at its next renewal.
* **A renewTime in the future** by more than our lease duration is a broken
  clock or a Lease not written by a replica: warned about. The times in Leases
  never decide anything (the expiries are counted on the reader's own clock).
* **Claims beyond a member's share**: a replica claims only its share of the
  split, and some slots it is letting go of. A Lease that claims slots outside
  its share for longer than our lease duration (a replica lets go within a few
  retry periods and its stopping time) is warned about, naming the slots.
  The claims are still honoured while the Lease is alive: they are what keeps
  two replicas off one slot while a slow one stops; the cap ends them if nobody
  renews the Lease.

Each oddity is said once per Lease while it lasts (and again if it goes away
and comes back), not in every round.
"""
from __future__ import annotations

import datetime
import logging
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

from kopf._core.engines.coordination import leases, sharding

logger = logging.getLogger('kopf.engines.memberjudging')


class _Notes:
    """The oddities said, per kind and Lease: each said once while it lasts, and again if it comes back."""

    def __init__(self) -> None:
        self.said: Dict[Tuple[str, str], str] = {}

    def say(self, kind: str, name: str, state: str, message: str) -> None:
        if self.said.get((kind, name)) != state:
            self.said[(kind, name)] = state
            logger.warning(message)

    def clear(self, kind: str, name: str) -> None:
        self.said.pop((kind, name), None)

    def forget(self, name: str) -> None:
        for key in [key for key in self.said if key[1] == name]:
            del self.said[key]


class Judge:
    """One replica's judgement of the other members' Leases, with the oddities it has said."""

    def __init__(
            self,
            *,
            namespace: str,
            field: str,
            timings: leases.LeaseTimings,
            name_of: Callable[[str], str],
    ) -> None:
        self.namespace = namespace
        self.field = field
        self.timings = timings
        self.name_of = name_of  # the name of a holder's Lease, as the replicas name their own
        self.notes = _Notes()
        self.overclaiming_since: Dict[str, float] = {}  # loop time, per Lease

    def peer(self, name: str, observation: leases.Observation, *, field: object, text: object,
             now: float) -> sharding.Peer:
        """The member as judged from its Lease (its hashed field, its claims' text): alive or not, and its claims."""
        record = observation.record or leases.LeaseRecord()
        alive = bool(record.holder) and now < observation.changed_at + leases.effective_duration(record, self.timings)
        claims, flaw = self._read(name, record, field=field, text=text)
        if flaw is not None:
            if alive:
                self.notes.say('flaw', name, flaw, f"The sharding's Lease {self.namespace}/{name} is not a "
                               f"replica's: {flaw}. It is ignored (not a member, its claims not honoured); only "
                               f"the operator's service account should write the Leases in {self.namespace!r}.")
            return sharding.Peer(name=name, alive=False, claims=frozenset(), field=None)
        self.notes.clear('flaw', name)
        if alive:
            self._check_duration(name, record)
            self._check_renew_time(name, record)
        if alive and field != self.field:
            self.notes.say('field', name, str(field),
                           f"The sharding's Lease {self.namespace}/{name} hashes {field!r}, this replica "
                           f"hashes {self.field!r}: no slot is taken over while it is alive (set the same "
                           f"settings.sharding.hashed_field on all replicas).")
            claims = sharding.ALL_SLOTS
        return sharding.Peer(name=name, alive=alive, claims=claims, field=str(field))

    def _read(self, name: str, record: leases.LeaseRecord, *, field: object,
              text: object) -> Tuple[sharding.Slots, Optional[str]]:
        """The claims, or why the Lease cannot be a replica's (then no claims)."""
        if record.holder and name != self.name_of(record.holder):
            return frozenset(), (f"a replica holding it as {record.holder!r} would name it "
                                 f"{self.name_of(record.holder)!r}")
        if field not in sharding.FIELDS:
            return frozenset(), f"its kopf.zalando.org/shard-by is {field!r}, not one of {', '.join(sharding.FIELDS)}"
        if not isinstance(text, str):
            return frozenset(), f"its kopf.zalando.org/shard-serving annotation is {text!r}, not the slots"
        try:
            return sharding.parse_slots(text), None
        except ValueError as e:
            return frozenset(), f"its kopf.zalando.org/shard-serving annotation is unreadable ({e})"

    def _check_duration(self, name: str, record: leases.LeaseRecord) -> None:
        duration = leases.effective_duration(record, self.timings)
        if duration < leases.asked_duration(record, self.timings):
            self.notes.say('duration', name, str(record.duration),
                           f"The sharding's Lease {self.namespace}/{name} held by {record.holder!r} asks for "
                           f"leaseDurationSeconds={record.duration}, more than {leases.MAX_DURATION_FACTOR} times "
                           f"this replica's lease duration: it is judged by {duration:g}s since it last changed "
                           f"(set the same settings.sharding timings on all replicas).")
        else:
            self.notes.clear('duration', name)

    def _check_renew_time(self, name: str, record: leases.LeaseRecord) -> None:
        renewed = leases.parse_micro_time(record.renew_time)
        horizon = _wall_now() + datetime.timedelta(seconds=self.timings.lease_duration)
        if renewed is not None and renewed > horizon:
            self.notes.say('future', name, 'future',
                           f"The sharding's Lease {self.namespace}/{name} held by {record.holder!r} has a renewTime "
                           f"in the future ({record.renew_time}): a clock that is wrong, or a Lease not written by "
                           f"a replica. The times in the Leases are not trusted: it expires "
                           f"{leases.effective_duration(record, self.timings):g}s after it was last seen to change.")
        else:
            self.notes.clear('future', name)

    def notice_overclaims(self, peers: Sequence[sharding.Peer], shares: Mapping[str, sharding.Slots],
                          *, now: float) -> None:
        """Say which live members claim slots beyond their share for longer than a replica takes to let go."""
        for peer in peers:
            extra = peer.claims - shares.get(peer.name, frozenset()) if peer.alive else frozenset()
            if not extra or peer.field != self.field:  # another field's Lease is said otherwise
                self.overclaiming_since.pop(peer.name, None)
                self.notes.clear('overclaim', peer.name)
                continue
            since = self.overclaiming_since.setdefault(peer.name, now)
            if now - since >= self.timings.lease_duration:
                slots = sharding.format_slots(extra)
                self.notes.say('overclaim', peer.name, slots,
                               f"The sharding's Lease {self.namespace}/{peer.name} claims the slots {slots} "
                               f"beyond its share for {now - since:.0f}s: a replica slow to stop them, or a Lease "
                               f"not written by a replica. They are not started elsewhere while it is alive; only "
                               f"the operator's service account should write the Leases in {self.namespace!r}.")

    def forget(self, name: str) -> None:
        """The Lease is gone: its oddities are not remembered (said again if it comes back with them)."""
        self.notes.forget(name)
        self.overclaiming_since.pop(name, None)


def _wall_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)
