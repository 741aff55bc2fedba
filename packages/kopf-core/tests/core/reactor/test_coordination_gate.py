"""
The operating gate: the operator operates only while every party consents (peering, leadership).

Inputs: the parties' consents set and cleared. Outputs: ``operating``, the
``changed`` wake-ups of the orchestrator, and the pauses reported (which stop
the daemons). Nothing is faked: the gate is plain events.
"""
import asyncio
from typing import List

from kopf._core.reactor import coordination


def make_gate() -> tuple[coordination.OperatingGate, asyncio.Event, asyncio.Event, List[str]]:
    operating, changed, pauses = asyncio.Event(), asyncio.Event(), []
    gate = coordination.OperatingGate(operating=operating, changed=changed, on_pause=lambda: pauses.append('pause'))
    return gate, operating, changed, pauses


async def test_one_party_alone_decides_as_before() -> None:
    gate, operating, changed, pauses = make_gate()
    peered = gate.consent()
    peered.set()
    assert operating.is_set() and changed.is_set()
    changed.clear()
    peered.clear()
    assert not operating.is_set() and changed.is_set()
    assert pauses == ['pause']


async def test_operating_needs_every_party() -> None:
    gate, operating, _, _ = make_gate()
    peered, leading = gate.consent(), gate.consent()
    peered.set()
    assert not operating.is_set()  # a follower: the peering allows, the Lease is not held
    leading.set()
    assert operating.is_set()


async def test_a_freeze_pauses_the_leader_and_a_lost_lease_pauses_the_unfrozen() -> None:
    gate, operating, _, pauses = make_gate()
    peered, leading = gate.consent(), gate.consent()
    peered.set()
    leading.set()
    peered.clear()  # kopf freeze
    assert not operating.is_set()
    peered.set()  # kopf resume
    assert operating.is_set()
    leading.clear()  # the renew deadline has passed
    assert not operating.is_set()
    assert pauses == ['pause', 'pause']


async def test_repeated_consents_wake_nobody() -> None:
    gate, operating, changed, pauses = make_gate()
    peered = gate.consent()
    peered.set()
    changed.clear()
    peered.set()
    assert not changed.is_set() and operating.is_set() and pauses == []
