"""
The membership Leases of automatic sharding on fake time: join, split, leave, die, step down, recover.

Inputs: replicas (each a Member + Sharder with its own connection) on the fake
API server of ``conftest.py`` (extended here with listing by labels and deleting),
which keeps the API server's resourceVersion preconditions and can refuse (403)
or stop answering (a cut-off network). The time is fake (looptime).
Outputs: the slots each replica serves over time (its ``apply`` calls, where a
stop takes a second, as stopping workers and daemons does), the Leases, the logs.
Checked at every change: no slot is served by two replicas at any moment.
Not faked: the sharder, its Lease helpers, the assignment.
"""
import asyncio
import copy
import logging
from typing import Any, AsyncIterator, Callable, Dict, FrozenSet, List, Optional, Tuple

import pytest

from kopf._cogs.clients import protocols
from kopf._core.engines.coordination import leases, membership, sharders, sharding

TIMINGS = leases.LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
STOP_DELAY = 1.0  # how long stopping the slots' streams, workers and daemons takes in these tests


class ListingClient:
    """A replica's connection to the fake API server of ``conftest.py``, also listing by labels and deleting."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.base = api.client()  # get, create, merge-patch; cut-offs and refusals

    @property
    def cut_off(self) -> bool:
        return bool(self.base.cut_off)

    @cut_off.setter
    def cut_off(self, value: bool) -> None:
        self.base.cut_off = value

    @property
    def forbidden(self) -> bool:
        return bool(self.base.forbidden)

    @forbidden.setter
    def forbidden(self, value: bool) -> None:
        self.base.forbidden = value

    async def get_object(self, *args: Any, **kwargs: Any) -> Any:
        return await self.base.get_object(*args, **kwargs)

    async def create_object(self, *args: Any, **kwargs: Any) -> Any:
        return await self.base.create_object(*args, **kwargs)

    async def patch_object(self, *args: Any, **kwargs: Any) -> Any:
        return await self.base.patch_object(*args, **kwargs)

    async def list_objects(self, resource: Any, *, namespace: str, label_selector: Optional[str] = None,
                           **_: Any) -> protocols.ObjectPage:
        await self.base._enter('list')
        key, _sep, value = (label_selector or '').partition('=')
        items = [copy.deepcopy(body) for (ns, _name), body in sorted(self.api.leases.items())
                 if ns == namespace and (not key or (body['metadata'].get('labels') or {}).get(key) == value)]
        return protocols.ObjectPage(items=items, resource_version=str(self.api.version))

    async def delete_object(self, resource: Any, *, namespace: str, name: str, **_: Any) -> None:
        await self.base._enter('delete')
        self.api.delete(namespace, name)

    def watch_objects(self, *args: Any, **kwargs: Any) -> Any:
        return self.base.watch_objects(*args, **kwargs)


class Ledger:
    """Who serves which slots, as the replicas' ``apply`` says; any overlap is recorded as a violation."""

    def __init__(self) -> None:
        self.active: Dict[str, FrozenSet[int]] = {}
        self.violations: List[str] = []
        self.changes: List[Tuple[float, str, FrozenSet[int]]] = []

    def applier(self, name: str) -> Callable[[FrozenSet[int]], Any]:
        async def apply(slots: FrozenSet[int]) -> None:
            old = self.active.get(name, frozenset())
            if old - slots:
                await asyncio.sleep(STOP_DELAY)
                self.active[name] = old & slots
            gained = slots - old
            for other, theirs in self.active.items():
                if other != name and theirs & gained:
                    self.violations.append(f'{name} started {sorted(theirs & gained)} served by {other}')
            self.active[name] = slots
            self.changes.append((asyncio.get_running_loop().time(), name, slots))
        return apply

    def total(self) -> FrozenSet[int]:
        return frozenset().union(*self.active.values())


class Replica:
    def __init__(self, api: Any, ledger: Ledger, identity: str) -> None:
        self.client = ListingClient(api)
        ref = leases.LeaseRef('ns', membership.lease_name('kopf-shard-test', identity))
        self.member = membership.Member(client=self.client, ref=ref, prefix='kopf-shard-test',  # type: ignore[arg-type]
                                        identity=identity, field='uid', timings=TIMINGS)
        self.sharder = sharders.Sharder(member=self.member, apply=ledger.applier(ref.name))
        self.task = asyncio.create_task(self.sharder.run())

    @property
    def name(self) -> str:
        return self.member.name

    async def stop(self, *, leave: bool) -> None:
        self.task.cancel()
        await asyncio.wait([self.task])
        if leave:
            await self.sharder.apply(frozenset())
            await self.sharder.leave()


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
async def replicas(lease_api: Any, ledger: Ledger) -> AsyncIterator[Callable[[str], Replica]]:
    made: List[Replica] = []

    def make(identity: str) -> Replica:
        made.append(Replica(lease_api, ledger, identity))
        return made[-1]
    yield make
    for replica in made:
        if not replica.task.done():
            await replica.stop(leave=False)
    assert not ledger.violations


async def until(condition: Callable[[], bool], timeout: float = 200) -> float:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "never happened"
        await asyncio.sleep(0.1)
    return loop.time()


def split_as_assigned(ledger: Ledger, members: List[Replica]) -> bool:
    expected = sharding.assign([replica.name for replica in members])
    return all(ledger.active.get(name) == slots for name, slots in expected.items())


@pytest.mark.looptime
async def test_a_single_member_serves_all_slots_at_once(replicas: Callable[[str], Replica],
                                                        ledger: Ledger, lease_api: Any) -> None:
    replica = replicas('a')
    assert await until(lambda: ledger.total() == sharding.ALL_SLOTS) < 1
    metadata = lease_api.leases[('ns', replica.name)]['metadata']
    assert metadata['labels'] == {membership.LABEL: 'kopf-shard-test'}
    assert metadata['annotations'] == {membership.SERVING: '0-63', membership.HASHED_FIELD: 'uid'}
    assert lease_api.spec('ns', replica.name)['holderIdentity'] == 'a'


@pytest.mark.looptime
async def test_three_members_split_the_slots_without_overlap(replicas: Callable[[str], Replica],
                                                             ledger: Ledger) -> None:
    members = [replicas(name) for name in ('a', 'b', 'c')]
    took = await until(lambda: split_as_assigned(ledger, members))
    assert took <= 4 * TIMINGS.retry_period
    assert ledger.total() == sharding.ALL_SLOTS


@pytest.mark.looptime
async def test_a_joining_member_takes_only_its_share(replicas: Callable[[str], Replica], ledger: Ledger,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    members = [replicas(name) for name in ('a', 'b', 'c')]
    await until(lambda: split_as_assigned(ledger, members))
    before = dict(ledger.active)
    joined_at = asyncio.get_running_loop().time()
    members.append(replicas('d'))
    took = await until(lambda: split_as_assigned(ledger, members)) - joined_at
    assert took <= 3 * TIMINGS.retry_period + STOP_DELAY
    for replica in members[:3]:
        assert ledger.active[replica.name] <= before[replica.name]  # only given away, nothing moved among them
    await asyncio.sleep(2 * TIMINGS.lease_duration)
    assert "beyond its share" not in caplog.text  # letting go is not a forged claim


@pytest.mark.looptime
async def test_a_killed_member_is_replaced_within_the_lease_duration(
        replicas: Callable[[str], Replica], ledger: Ledger) -> None:
    members = [replicas(name) for name in ('a', 'b', 'c')]
    await until(lambda: split_as_assigned(ledger, members))
    victim = members.pop()
    victim.client.cut_off = True  # as with kill -9: no more writes, nothing released
    last_renewal = victim.sharder.renewed_at
    assert last_renewal is not None
    del ledger.active[victim.name]  # dead: it serves nothing (the survivors must not wait for it to say so)
    taken_at = await until(lambda: split_as_assigned(ledger, members))
    # The survivors watch the Leases: they see the last renewal when it happens, and act at its expiry.
    assert TIMINGS.lease_duration <= taken_at - last_renewal <= TIMINGS.lease_duration + 0.5
    assert ledger.total() == sharding.ALL_SLOTS


@pytest.mark.looptime
async def test_a_leaving_member_hands_over_at_once(replicas: Callable[[str], Replica],
                                                   ledger: Ledger, lease_api: Any) -> None:
    members = [replicas(name) for name in ('a', 'b')]
    await until(lambda: split_as_assigned(ledger, members))
    leaver = members.pop()
    left_at = asyncio.get_running_loop().time()
    await leaver.stop(leave=True)
    assert ('ns', leaver.name) not in lease_api.leases
    took = await until(lambda: split_as_assigned(ledger, members)) - left_at
    assert took <= STOP_DELAY + 1  # the deletion is seen in the watch-stream: no round's wait


@pytest.mark.looptime
async def test_a_cut_off_member_stops_before_the_others_take_over(
        replicas: Callable[[str], Replica], ledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    members = [replicas(name) for name in ('a', 'b')]
    await until(lambda: split_as_assigned(ledger, members))
    isolated = members[1]
    isolated.client.cut_off = True
    stopped_at = await until(lambda: not ledger.active[isolated.name])
    assert ledger.active[members[0].name] != sharding.ALL_SLOTS  # not yet taken over
    taken_at = await until(lambda: ledger.active[members[0].name] == sharding.ALL_SLOTS)
    assert stopped_at < taken_at
    assert "not renewed within the renew deadline of 10s: stopping serving all slots" in caplog.text


def forge(lease_api: Any, holder: str, *, serving: str = '', field: str = 'uid', duration: int = 2147483647,
          name: Optional[str] = None, renew_time: str = '2026-01-01T00:00:00.000000Z') -> str:
    """A Lease with the group's label written by someone other than a replica (by hand, or an attacker)."""
    name = name or membership.lease_name('kopf-shard-test', holder)
    body = {'metadata': {'name': name, 'namespace': 'ns', 'labels': {membership.LABEL: 'kopf-shard-test'},
                         'annotations': {membership.SERVING: serving, membership.HASHED_FIELD: field}},
            'spec': {'holderIdentity': holder, 'leaseDurationSeconds': duration, 'renewTime': renew_time}}
    lease_api._store('ns', name, body, 'MODIFIED' if ('ns', name) in lease_api.leases else 'ADDED')
    return name


def warnings_about(caplog: pytest.LogCaptureFixture, *texts: str) -> List[str]:
    return [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING
            and all(text in record.getMessage() for text in texts)]


@pytest.mark.looptime
async def test_a_68_year_lease_that_nobody_renews_expires_after_the_cap(
        replicas: Callable[[str], Replica], ledger: Ledger, lease_api: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    ghost = forge(lease_api, 'ghost', duration=2147483647)
    members = [replicas(name) for name in ('a', 'b')]
    await asyncio.sleep(10)
    shares = sharding.assign([ghost] + [replica.name for replica in members])
    assert all(ledger.active.get(replica.name) == shares[replica.name] for replica in members)  # alive for now
    took = await until(lambda: split_as_assigned(ledger, members))
    cap = leases.MAX_DURATION_FACTOR * TIMINGS.lease_duration
    assert cap <= took <= cap + 2 * TIMINGS.retry_period + STOP_DELAY
    assert ledger.total() == sharding.ALL_SLOTS
    said = warnings_about(caplog, f"ns/{ghost} held by 'ghost' asks for leaseDurationSeconds=2147483647")
    assert len(said) == 2  # once by each replica, not in every round
    assert "it is judged by 60s since it last changed" in said[0]
    await until(lambda: ('ns', ghost) not in lease_api.leases, timeout=membership.GC_DURATIONS * cap + 10)


@pytest.mark.looptime
async def test_64_forged_leases_leave_the_real_replicas_their_share_after_the_cap(
        replicas: Callable[[str], Replica], ledger: Ledger, lease_api: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    ghosts = [forge(lease_api, f'ghost-{index}') for index in range(64)]
    members = [replicas(name) for name in ('a', 'b')]
    await asyncio.sleep(10)
    assert len(ledger.total()) < 8  # the ghosts' shares are served by nobody while they are alive
    took = await until(lambda: split_as_assigned(ledger, members))
    assert took <= leases.MAX_DURATION_FACTOR * TIMINGS.lease_duration + 2 * TIMINGS.retry_period + 1
    assert ledger.total() == sharding.ALL_SLOTS
    for ghost in ghosts:
        assert len(warnings_about(caplog, f"ns/{ghost} held by", "asks for leaseDurationSeconds")) == 2


@pytest.mark.looptime
async def test_a_forged_claim_of_all_slots_is_named_and_ends_with_the_cap(
        replicas: Callable[[str], Replica], ledger: Ledger, lease_api: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    members = [replicas(name) for name in ('a', 'b')]
    await until(lambda: split_as_assigned(ledger, members))
    forged_at = asyncio.get_running_loop().time()
    ghost = forge(lease_api, 'ghost', serving='0-63')
    shares = sharding.assign([ghost] + [replica.name for replica in members])
    await asyncio.sleep(TIMINGS.lease_duration + 2 * TIMINGS.retry_period)
    # The real replicas keep their share of the split with the ghost: its claims take nothing from them.
    assert all(ledger.active.get(replica.name) == shares[replica.name] for replica in members)
    said = warnings_about(caplog, f"ns/{ghost} claims the slots")
    assert len(said) == 2  # once by each replica
    assert f"claims the slots {sharding.format_slots(sharding.ALL_SLOTS - shares[ghost])} beyond its share" in said[0]
    took = await until(lambda: split_as_assigned(ledger, members)) - forged_at
    cap = leases.MAX_DURATION_FACTOR * TIMINGS.lease_duration
    assert cap <= took <= cap + 2 * TIMINGS.retry_period + STOP_DELAY


@pytest.mark.looptime
async def test_a_forged_claim_kept_renewed_takes_only_its_share_and_is_named(
        replicas: Callable[[str], Replica], ledger: Ledger, lease_api: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    members = [replicas(name) for name in ('a', 'b')]
    await until(lambda: split_as_assigned(ledger, members))
    for second in range(0, 120, 2):  # the limit: whoever may write Leases can keep one alive
        ghost = forge(lease_api, 'ghost', serving='0-63', duration=15, renew_time=f'2026-01-01T00:{second // 60:02}:'
                                                                                    f'{second % 60:02}.000000Z')
        await asyncio.sleep(2)
    shares = sharding.assign([ghost] + [replica.name for replica in members])
    assert all(ledger.active.get(replica.name) == shares[replica.name] for replica in members)
    assert len(warnings_about(caplog, f"ns/{ghost} claims the slots")) == 2  # not one per renewal or round


@pytest.mark.looptime
@pytest.mark.parametrize('holder, serving, field, name, flaw', [
    ('x', 'all of them!', 'uid', None, "kopf.zalando.org/shard-serving annotation is unreadable"),
    ('x', '0-63,0-63', 'uid', None, "would be '0-63'"),
    ('x', '0-3,7,4-6', 'uid', None, "would be '0-7'"),
    ('x', '0-' + '0' * 1000 + '63', 'uid', None, "longer than any slots' notation"),
    ('x', '0-63', 'uuid', None, "its kopf.zalando.org/shard-by is 'uuid'"),
    ('x', '0-63', 'uid', 'kopf-shard-test-garbage', "a replica holding it as 'x' would name it"),
])
async def test_a_lease_that_no_replica_writes_is_ignored_at_once_and_named(
        replicas: Callable[[str], Replica], ledger: Ledger, lease_api: Any, caplog: pytest.LogCaptureFixture,
        holder: str, serving: str, field: str, name: Optional[str], flaw: str) -> None:
    garbage = forge(lease_api, holder, serving=serving, field=field, name=name, duration=15)
    replica = replicas('a')
    took = await until(lambda: ledger.active.get(replica.name) == sharding.ALL_SLOTS)
    assert took <= 2 * TIMINGS.retry_period  # not after the garbage's lease duration
    await asyncio.sleep(TIMINGS.lease_duration)
    said = warnings_about(caplog, f"The sharding's Lease ns/{garbage} is not a replica's")
    assert len(said) == 1
    assert flaw in said[0]
    assert "It is ignored (not a member, its claims not honoured)" in said[0]
    await until(lambda: ('ns', garbage) not in lease_api.leases)  # deleted when dead for long


@pytest.mark.looptime
async def test_a_renew_time_in_the_future_is_said_once(
        replicas: Callable[[str], Replica], ledger: Ledger, lease_api: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    ghost = forge(lease_api, 'ghost', duration=15, renew_time='2090-01-01T00:00:00.000000Z')
    replica = replicas('a')
    took = await until(lambda: ledger.active.get(replica.name) == sharding.ALL_SLOTS)
    assert TIMINGS.lease_duration <= took <= TIMINGS.lease_duration + 2 * TIMINGS.retry_period
    said = warnings_about(caplog, f"ns/{ghost} held by 'ghost' has a renewTime in the future")
    assert len(said) == 1
    assert "it expires 15s after it was last seen to change" in said[0]


@pytest.mark.looptime
async def test_no_permission_is_said_once_and_recovered_from(
        replicas: Callable[[str], Replica], ledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    replica = replicas('a')
    replica.client.forbidden = True
    await asyncio.sleep(20)
    assert not ledger.active.get(replica.name)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "Not permitted to use the sharding's Leases in 'ns'" in errors[0]
    assert "get, list, watch, create, patch and delete on the leases of coordination.k8s.io" in errors[0]
    replica.client.forbidden = False
    await until(lambda: ledger.active.get(replica.name) == sharding.ALL_SLOTS)
    assert "The sharding's Leases in 'ns' are usable again." in caplog.text


@pytest.mark.looptime
async def test_its_own_lease_edited_by_hand_is_rewritten(
        replicas: Callable[[str], Replica], ledger: Ledger, lease_api: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    replica = replicas('a')
    await until(lambda: ledger.total() == sharding.ALL_SLOTS)
    lease_api.put('ns', replica.name, {'holderIdentity': 'nonsense', 'leaseDurationSeconds': -5})
    await asyncio.sleep(2 * TIMINGS.retry_period)
    body = lease_api.leases[('ns', replica.name)]
    assert body['spec']['holderIdentity'] == 'a'
    assert body['metadata']['annotations'][membership.SERVING] == '0-63'
    assert ledger.active[replica.name] == sharding.ALL_SLOTS  # never stopped
    assert caplog.text.count("was changed by another writer") == 1


@pytest.mark.looptime
async def test_a_peer_hashing_another_field_blocks_taking_over(
        replicas: Callable[[str], Replica], ledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    first = replicas('a')
    await until(lambda: ledger.total() == sharding.ALL_SLOTS)
    second = replicas('b')
    second.member.field = second.member.judge.field = 'namespace'
    await asyncio.sleep(10)
    assert ledger.active.get(second.name, frozenset()) == frozenset()  # 'a' claims all, 'b' waits
    assert ledger.active[first.name] == sharding.assign([first.name, second.name])[first.name]  # 'a' let go
    assert "hashes 'namespace', this replica hashes 'uid'" in caplog.text


def test_lease_names_are_valid_and_stable() -> None:
    name = membership.lease_name('kopf-shard-default', 'user@host/1234')
    assert name == membership.lease_name('kopf-shard-default', 'user@host/1234')
    assert name != membership.lease_name('kopf-shard-default', 'user@host/1235')
    assert name.startswith('kopf-shard-default-') and len(name) == len('kopf-shard-default-') + 10
    assert membership.default_prefix('My_Peering!') == 'kopf-shard-my-peering'


@pytest.mark.parametrize('prefix', ['Bad_Name!', '', '-x', 'x' * 53])
def test_a_prefix_that_kubernetes_refuses_is_said_at_once(prefix: str) -> None:
    with pytest.raises(leases.LeaseError, match=r"not valid in Kubernetes: use at most 52 lowercase"):
        membership.check_prefix(prefix)
