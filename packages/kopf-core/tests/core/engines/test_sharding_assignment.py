"""
The slots' assignment of automatic sharding: pure functions, no I/O.

Inputs: member names (1..50 members; joins and leaves), slot sets, annotations.
Outputs: which member gets which slots, the shard selectors, the plans of rounds.
Properties: every slot has exactly one owner; a join or a leave moves only
the slots of the member that joins or leaves (about 1/N); the selectors keep
exactly the hashes of the slots (checked with the selectors' own parser).
"""
from typing import Dict, FrozenSet, List

import pytest

from kopf._cogs.structs import shards
from kopf._core.engines.coordination import sharding


def names(count: int) -> List[str]:
    return [f'kopf-shard-default-{index:04x}' for index in range(count)]


@pytest.mark.parametrize('count', range(1, 51))
def test_every_slot_has_exactly_one_owner(count: int) -> None:
    owned = sharding.assign(names(count))
    assert set(owned) == set(names(count))
    total = sum(len(slots) for slots in owned.values())
    union = frozenset().union(*owned.values())
    assert total == sharding.SLOTS  # no overlap ...
    assert union == sharding.ALL_SLOTS  # ... and no gap


def test_the_assignment_is_the_same_in_any_order() -> None:
    members = names(7)
    assert sharding.assign(members) == sharding.assign(list(reversed(members)))
    assert sharding.assign(members) == sharding.assign(members + members[:2])


def moved(before: Dict[str, FrozenSet[int]], after: Dict[str, FrozenSet[int]]) -> int:
    owner_before = {slot: name for name, slots in before.items() for slot in slots}
    owner_after = {slot: name for name, slots in after.items() for slot in slots}
    return sum(owner_before[slot] != owner_after[slot] for slot in range(sharding.SLOTS))


@pytest.mark.parametrize('count', range(1, 50))
def test_a_join_moves_only_the_slots_of_the_new_member(count: int) -> None:
    before = sharding.assign(names(count))
    after = sharding.assign(names(count + 1))
    newcomer = names(count + 1)[-1]
    assert moved(before, after) == len(after[newcomer])
    for name in names(count):  # nobody gains anything but the newcomer
        assert after[name] <= before[name]


@pytest.mark.parametrize('count', range(2, 51))
def test_a_leave_moves_only_the_slots_of_the_member_that_left(count: int) -> None:
    members = names(count)
    before = sharding.assign(members)
    for gone in (members[0], members[-1]):
        after = sharding.assign([name for name in members if name != gone])
        assert moved(before, after) == len(before[gone])
        for name in after:
            assert after[name] >= before[name]


def test_moves_are_about_one_nth_on_average() -> None:
    # Over many memberships, a join of the N+1-th member moves ~SLOTS/(N+1) slots.
    for count in (2, 3, 5, 10):
        totals = [moved(sharding.assign([f'g{group}-{i}' for i in range(count)]),
                        sharding.assign([f'g{group}-{i}' for i in range(count + 1)])) for group in range(40)]
        average = sum(totals) / len(totals)
        expected = sharding.SLOTS / (count + 1)
        assert expected * 0.7 < average < expected * 1.3, (count, average)


def test_the_load_is_spread_among_three_members() -> None:
    sizes = sorted(len(slots) for slots in sharding.assign(names(3)).values())
    assert sum(sizes) == 64 and sizes[0] >= 10  # not a member left (nearly) idle


def test_no_members_own_nothing() -> None:
    assert sharding.assign([]) == {}


def test_slots_merge_into_runs() -> None:
    assert sharding.runs({5, 0, 1, 2, 7, 8}) == [(0, 2), (5, 5), (7, 8)]
    assert sharding.runs(set()) == []


@pytest.mark.parametrize('field', ['uid', 'namespace'])
def test_the_selector_keeps_exactly_the_slots_hashes(field: str) -> None:
    slots = frozenset({0, 1, 2, 9, 33, 63})
    text = sharding.selector(slots, field=field)
    assert text is not None
    parsed = shards.parse(text)  # the same parser as the client-side filter's
    assert parsed.field == sharding.FIELDS[field]
    assert len(parsed.ranges) == 4  # 0-2, 9, 33, 63
    assert parsed.ranges[-1].end == shards.HASH_SPACE
    for value in (f'value-{index}' for index in range(2000)):
        body = {'metadata': {field: value}}
        assert parsed.matches(body) == (sharding.slot_of(value) in slots)


def test_the_selector_of_all_slots_is_none_and_of_no_slots_is_refused() -> None:
    assert sharding.selector(sharding.ALL_SLOTS, field='uid') is None
    with pytest.raises(ValueError):
        sharding.selector(frozenset(), field='uid')


def test_slots_of_a_hash_cover_the_space_in_order() -> None:
    assert sharding.SLOT_WIDTH * sharding.SLOTS == shards.HASH_SPACE
    assert sharding.slot_of('') == shards.hash_value('') // sharding.SLOT_WIDTH


@pytest.mark.parametrize('slots, text', [
    (frozenset(), ''),
    (frozenset({3}), '3'),
    (frozenset({0, 1, 2, 3, 7, 9, 10}), '0-3,7,9-10'),
    (sharding.ALL_SLOTS, '0-63'),
])
def test_the_annotations_notation_goes_both_ways(slots: FrozenSet[int], text: str) -> None:
    assert sharding.format_slots(slots) == text
    assert sharding.parse_slots(text) == slots


@pytest.mark.parametrize('text', ['x', '1-', '-1', '3-1', '64', '0-64', '1;2', '1.5'])
def test_garbage_in_the_annotation_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        sharding.parse_slots(text)


@pytest.mark.parametrize('text', ['0-63,0-63', '7,0-3', '0-3,4', '01', ' 3', '3,', '0 - 3', '0-0'])
def test_only_the_notation_as_replicas_write_it_is_read(text: str) -> None:
    with pytest.raises(ValueError, match=r"not as the replicas write the slots|not a slot"):
        sharding.parse_slots(text)


def test_a_notation_longer_than_any_is_refused_before_it_is_read() -> None:
    longest = sharding.format_slots(range(0, sharding.SLOTS, 2))
    assert len(longest) <= sharding.MAX_SLOTS_TEXT
    with pytest.raises(ValueError, match="longer than any slots' notation"):
        sharding.parse_slots(','.join(['0-63'] * 100_000))


def test_a_plan_releases_what_is_not_ours_and_claims_only_free_slots() -> None:
    me, other = 'a', 'b'
    owned = sharding.assign([me, other])
    peer = sharding.Peer(name=other, alive=True, claims=owned[me] | owned[other])  # not let go yet
    plan = sharding.plan(me=me, peers=[peer], serving=sharding.ALL_SLOTS)
    assert plan.shares == owned  # every live member's, from the members alone, not from their claims
    assert plan.mine == owned[me]
    assert plan.release == owned[other]
    assert plan.claim == frozenset()  # ours, but the other one still claims them


def test_a_plan_claims_the_slots_let_go_of_and_those_of_the_dead() -> None:
    owned = sharding.assign(['a', 'b'])
    alive = sharding.Peer(name='b', alive=True, claims=owned['b'])
    assert sharding.plan(me='a', peers=[alive], serving=frozenset()).claim == owned['a']
    dead = sharding.Peer(name='b', alive=False, claims=sharding.ALL_SLOTS)
    plan = sharding.plan(me='a', peers=[dead], serving=frozenset())
    assert plan.mine == plan.claim == sharding.ALL_SLOTS
