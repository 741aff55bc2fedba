"""
Automatic sharding: the pure part — which member serves which slots of the hash space.

The 64-bit hash space of ``shardRange(...)`` (see :mod:`kopf._cogs.structs.shards`)
is cut into :data:`SLOTS` equal slots. Every slot goes to the live member with
the highest score ``blake2b(slot, member)`` (rendezvous hashing): all members
compute the same assignment from the same member names, with no coordination,
and a member that joins or leaves moves only the slots it takes or gives (about
1/N of them), never slots between the others.

A member's served slots are merged into contiguous ranges and joined with ``||``
into one shard selector for the API server (and for the client-side filter of a
server that ignores it).

Also here: the plan of one round (what to let go of, what to claim) given the
other members as judged from their Leases, and the slots' notation in the Leases'
annotations ("0-3,7"). Nothing here does I/O or reads a clock.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Collection, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from kopf._cogs.structs import shards

SLOTS = 64  # a power of two: every slot is an exact range of the hash space
SLOT_WIDTH = shards.HASH_SPACE // SLOTS
ALL_SLOTS: FrozenSet[int] = frozenset(range(SLOTS))

# The settings' names of the hashed fields, as the shard selectors name them.
FIELDS: Mapping[str, str] = {'uid': 'object.metadata.uid', 'namespace': 'object.metadata.namespace'}

Slots = FrozenSet[int]

# The longest notation of any slots: at most 32 separate runs of up to "nn-nn" and their commas.
MAX_SLOTS_TEXT = 6 * SLOTS // 2


def score(member: str, slot: int) -> int:
    """The member's score for the slot: the highest score takes it (ties go to the lower name)."""
    digest = hashlib.blake2b(f'{slot}/{member}'.encode(), digest_size=8).digest()
    return int.from_bytes(digest, 'big')


def assign(members: Iterable[str], *, slots: int = SLOTS) -> Dict[str, Slots]:
    """Every slot to exactly one member (each member in the result, maybe with no slots)."""
    names = sorted(set(members))
    if not names:
        return {}
    owned: Dict[str, List[int]] = {name: [] for name in names}
    for slot in range(slots):
        winner = max(names, key=lambda name: (score(name, slot), _reverse(name)))
        owned[winner].append(slot)
    return {name: frozenset(slots_) for name, slots_ in owned.items()}


def _reverse(name: str) -> Tuple[int, ...]:
    # For ties in max(): the lower name wins (a tie of 64-bit scores is practically never, but defined).
    return tuple(-ord(char) for char in name)


def slot_of(value: str) -> int:
    """The slot of a hashed field's value (e.g. an object's uid)."""
    return shards.hash_value(value) // SLOT_WIDTH


def runs(slots: Collection[int]) -> List[Tuple[int, int]]:
    """The slots merged into contiguous runs ``[first, last]`` (inclusive), in order."""
    merged: List[Tuple[int, int]] = []
    for slot in sorted(slots):
        if merged and merged[-1][1] == slot - 1:
            merged[-1] = (merged[-1][0], slot)
        else:
            merged.append((slot, slot))
    return merged


def selector(slots: Collection[int], *, field: str) -> Optional[str]:
    """
    The shard selector of the slots; ``None`` for all of them (nothing to filter).

    Raises ``ValueError`` for no slots: a member without slots watches nothing.
    """
    if not slots:
        raise ValueError("No shard selector selects no objects: a member without slots watches nothing.")
    if set(slots) >= ALL_SLOTS:
        return None
    return '||'.join(shards.format_range(FIELDS[field], first * SLOT_WIDTH, (last + 1) * SLOT_WIDTH)
                     for first, last in runs(slots))


def format_slots(slots: Collection[int]) -> str:
    """The annotation's notation: runs joined with commas, e.g. ``0-3,7``; empty for none."""
    return ','.join(str(first) if first == last else f'{first}-{last}' for first, last in runs(slots))


def parse_slots(text: str) -> Slots:
    """
    Read the annotation's notation; ``ValueError`` if it is not one (e.g. edited by hand).

    Only the notation exactly as :func:`format_slots` writes it is accepted (ascending,
    separate runs, no spaces): anything else was not written by a replica.
    """
    if len(text) > MAX_SLOTS_TEXT:
        raise ValueError(f"longer than any slots' notation: {len(text)} characters")
    found: List[int] = []
    for part in filter(None, text.split(',')):
        first, sep, last = part.partition('-')
        if not first.isdigit() or (sep and not last.isdigit()):
            raise ValueError(f"not a slot or a range of slots: {part!r}")
        low, high = int(first), int(last) if sep else int(first)
        if not low <= high < SLOTS:
            raise ValueError(f"slots must be within 0..{SLOTS - 1} and ascending: {part!r}")
        found.extend(range(low, high + 1))
    slots = frozenset(found)
    if format_slots(slots) != text:
        raise ValueError(f"not as the replicas write the slots (ascending, separate runs, e.g. '0-3,7'): "
                         f"{text!r} would be {format_slots(slots)!r}")
    return slots


@dataclasses.dataclass(frozen=True)
class Peer:
    """Another member, as this member judges it from its Lease."""
    name: str
    alive: bool  # held, and seen to change within its lease's duration
    claims: Slots  # what it says it serves (or may serve any moment); all of them if unreadable
    field: Optional[str] = None  # what it hashes (None if it does not say)


@dataclasses.dataclass(frozen=True)
class Plan:
    """One round's decisions for one member."""
    mine: Slots  # assigned to this member by the live membership
    release: Slots  # served here, but not ours anymore: stop them, then publish it
    claim: Slots  # ours, not served here, and claimed by no live member: claim, verify, start
    shares: Mapping[str, Slots] = dataclasses.field(default_factory=dict)  # every live member's (ours too)


def plan(*, me: str, peers: Sequence[Peer], serving: Slots) -> Plan:
    """What this member does now: let go of what is not its own; claim what is its own and free."""
    shares = assign([me] + [peer.name for peer in peers if peer.alive])
    mine = shares[me]
    return Plan(mine=mine, release=serving - mine, claim=mine - serving - claimed(peers), shares=shares)


def claimed(peers: Sequence[Peer]) -> Slots:
    """The slots that the live members claim: nobody else may start them."""
    return frozenset().union(*(peer.claims for peer in peers if peer.alive))
