"""
The leader election's state machine on fake time: acquire, renew, lose, release, expire, conflict.

Inputs: electors (one per replica, each with its own connection) on the fake
API server of ``conftest.py``, which keeps the API server's resourceVersion
preconditions, and can refuse (403) or stop answering (a cut-off network).
The time is fake (looptime): every assertion is on exact loop seconds.
Outputs: the ``leading`` events, the Lease as written, the log lines.
Not faked: the elector, its Lease helpers, its watch-stream of the Lease.
"""
import asyncio
import logging
from typing import Any, AsyncIterator, Callable, List, Optional

import pytest

from kopf._core.engines.coordination import leadership, leases

TIMINGS = leases.LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
REF = leases.LeaseRef(namespace='ns', name='lease')


class Replica:
    def __init__(self, api: Any, identity: str, *, watch: bool = True) -> None:
        self.client = api.client()
        self.leading = asyncio.Event()
        self.elector = leadership.Elector(client=self.client, ref=REF, identity=identity, timings=TIMINGS,
                                          leading=self.leading, watch=watch)
        self.task: Optional[asyncio.Task[None]] = None

    def start(self) -> 'Replica':
        self.task = asyncio.create_task(self.elector.run())
        return self

    async def stop(self, *, release: bool = False) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.wait([self.task])
        if release:
            await self.elector.release()


@pytest.fixture
async def replicas(lease_api: Any) -> AsyncIterator[Callable[..., Replica]]:
    made: List[Replica] = []

    def make(identity: str, **kwargs: Any) -> Replica:
        made.append(Replica(lease_api, identity, **kwargs).start())
        return made[-1]
    yield make
    for replica in made:
        if replica.task is not None and not replica.task.done():
            await replica.stop()


async def until(event: asyncio.Event, timeout: float = 100) -> float:
    await asyncio.wait_for(event.wait(), timeout=timeout)
    return asyncio.get_running_loop().time()


async def until_cleared(event: asyncio.Event, timeout: float = 100) -> float:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while event.is_set():
        assert loop.time() < deadline, "never cleared"
        await asyncio.sleep(0.1)
    return loop.time()


def infos(caplog: pytest.LogCaptureFixture) -> List[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and r.name.startswith('kopf')]


@pytest.mark.looptime
async def test_an_absent_lease_is_acquired_at_once(lease_api: Any, replicas: Callable[..., Replica],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    replica = replicas('me')
    assert await until(replica.leading) == 0
    spec = lease_api.spec('ns', 'lease')
    assert spec['holderIdentity'] == 'me' and spec['leaseDurationSeconds'] == 15
    assert spec['leaseTransitions'] == 0 and spec['acquireTime'] == spec['renewTime']
    assert infos(caplog) == ["Became the leader: the Lease ns/lease is held by 'me'."]


@pytest.mark.looptime
async def test_the_leader_renews_every_retry_period(lease_api: Any, replicas: Callable[..., Replica]) -> None:
    replica = replicas('me')
    await until(replica.leading)
    await asyncio.sleep(9)
    assert [write['at'] for write in lease_api.writes] == [0, 2, 4, 6, 8]
    assert len({write['spec']['acquireTime'] for write in lease_api.writes}) == 1
    assert replica.leading.is_set()


@pytest.mark.looptime
async def test_a_follower_waits_while_the_leader_renews(lease_api: Any, replicas: Callable[..., Replica]) -> None:
    leader = replicas('leader')
    await until(leader.leading)
    follower = replicas('follower')
    await asyncio.sleep(60)
    assert leader.leading.is_set() and not follower.leading.is_set()
    assert follower.client.requests.count('get') <= 1  # watched, not polled


@pytest.mark.looptime
async def test_a_leader_cut_off_stops_leading_before_its_lease_expires_elsewhere(
        lease_api: Any, replicas: Callable[..., Replica], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    leader = replicas('leader')
    await until(leader.leading)
    follower = replicas('follower')
    await asyncio.sleep(5)
    leader.client.cut_off = True  # the last renewal was sent at 4
    lost_at = await until_cleared(leader.leading)
    acquired_at = await until(follower.leading)
    assert lost_at == pytest.approx(14, abs=0.1)  # the renewal at 4 + the renew deadline of 10
    assert acquired_at == 19  # the change seen at 4 + the lease duration of 15
    assert "Lost the leadership of the Lease ns/lease (not renewed within the renew deadline of 10s); " \
           "stopped handling." in infos(caplog)
    assert lease_api.spec('ns', 'lease')['leaseTransitions'] == 1


@pytest.mark.looptime
async def test_a_released_lease_is_taken_over_at_once(lease_api: Any, replicas: Callable[..., Replica],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    leader = replicas('leader')
    await until(leader.leading)
    follower = replicas('follower')
    await asyncio.sleep(7)
    await leader.stop(release=True)
    released_at = asyncio.get_running_loop().time()
    assert await until(follower.leading) == released_at  # watched: no poll, no expiry to wait for
    assert "Released the Lease ns/lease for the next leader." in infos(caplog)
    assert lease_api.writes[-2]['spec']['leaseDurationSeconds'] == 1
    assert 'holderIdentity' not in lease_api.writes[-2]['spec']


@pytest.mark.looptime
async def test_a_released_lease_is_taken_over_within_a_retry_period_when_not_watched(
        lease_api: Any, replicas: Callable[..., Replica]) -> None:
    leader = replicas('leader')
    await until(leader.leading)
    follower = replicas('follower', watch=False)
    await asyncio.sleep(7)
    await leader.stop(release=True)
    assert await until(follower.leading) == 8  # its next poll


@pytest.mark.looptime
async def test_another_holders_abandoned_lease_is_acquired_when_it_expires(
        lease_api: Any, replicas: Callable[..., Replica]) -> None:
    lease_api.put('ns', 'lease', {'holderIdentity': 'ghost', 'leaseDurationSeconds': 15,
                                  'renewTime': '2020-01-01T00:00:00.000000Z', 'leaseTransitions': 7})
    replica = replicas('me')
    assert await until(replica.leading) == 15
    assert lease_api.spec('ns', 'lease')['leaseTransitions'] == 8


@pytest.mark.looptime
async def test_of_two_candidates_at_once_one_leads(lease_api: Any, replicas: Callable[..., Replica]) -> None:
    first, second = replicas('first'), replicas('second')
    await asyncio.sleep(30)
    assert [first.leading.is_set(), second.leading.is_set()].count(True) == 1
    assert len({write['spec']['holderIdentity'] for write in lease_api.writes}) == 1


@pytest.mark.looptime
async def test_a_lease_taken_from_the_leader_is_noticed_at_once(lease_api: Any, replicas: Callable[..., Replica],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    leader = replicas('leader')
    await until(leader.leading)
    await asyncio.sleep(3)
    lease_api.put('ns', 'lease', {'holderIdentity': 'usurper', 'leaseDurationSeconds': 15})
    assert await until_cleared(leader.leading) == pytest.approx(3, abs=0.2)
    assert "Lost the leadership of the Lease ns/lease (held by 'usurper' now); stopped handling." in infos(caplog)


@pytest.mark.looptime
async def test_missing_permissions_are_said_once_and_retried(lease_api: Any, replicas: Callable[..., Replica],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    replica = Replica(lease_api, 'me')
    replica.client.forbidden = True
    replica.start()
    await asyncio.sleep(20)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert errors == [
        "Not permitted to use the Lease ns/lease for leader election (leases.coordination.k8s.io is forbidden: "
        "cannot get resource \"leases\"). Grant the operator get, create, update, patch and watch on the leases "
        "of coordination.k8s.io in 'ns'; retrying every 2s.",
    ]
    assert replica.client.requests.count('get') == 10  # every 2 seconds
    replica.client.forbidden = False
    assert await until(replica.leading) == 20
    assert "The Lease ns/lease is usable again for leader election." in infos(caplog)
    await replica.stop()


@pytest.mark.looptime
async def test_a_renew_time_in_the_future_is_said_once_and_ignored(
        lease_api: Any, replicas: Callable[..., Replica], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    lease_api.put('ns', 'lease', {'holderIdentity': 'ghost', 'leaseDurationSeconds': 15,
                                  'renewTime': '2999-01-01T00:00:00.000000Z'})
    replica = replicas('me', watch=False)  # polled: the same record is seen again and again
    assert await until(replica.leading) == 15
    assert [r.getMessage() for r in caplog.records] == [
        "The Lease ns/lease held by 'ghost' has a renewTime in the future (2999-01-01T00:00:00.000000Z): "
        "the time in the Lease is ignored; it expires 15s after it last changed."]


@pytest.mark.looptime
async def test_a_negative_duration_is_said_once_and_judged_by_ours(
        lease_api: Any, replicas: Callable[..., Replica], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    lease_api.put('ns', 'lease', {'holderIdentity': 'ghost', 'leaseDurationSeconds': -5})
    replica = replicas('me', watch=False)
    assert await until(replica.leading) == 15
    assert [r.getMessage() for r in caplog.records] == [
        "The Lease ns/lease held by 'ghost' has no valid leaseDurationSeconds (-5): it is judged by ours, "
        "15s since it last changed."]


@pytest.mark.looptime
async def test_a_deleted_lease_is_created_again(lease_api: Any, replicas: Callable[..., Replica]) -> None:
    replica = replicas('me')
    await until(replica.leading)
    await asyncio.sleep(3)
    del lease_api.leases[('ns', 'lease')]
    await asyncio.sleep(10)
    assert lease_api.spec('ns', 'lease')['holderIdentity'] == 'me'


@pytest.mark.looptime
async def test_the_renewal_is_judged_by_the_clock_up_to_the_renew_deadline(
        lease_api: Any, replicas: Callable[..., Replica]) -> None:
    leader = replicas('leader')
    await until(leader.leading)
    await asyncio.sleep(5)
    leader.client.cut_off = True  # the last renewal was sent at 4
    await asyncio.sleep(13.9 - asyncio.get_running_loop().time())
    assert leader.elector.renewed()
    await asyncio.sleep(0.2)  # at 14.1: past the renew deadline, whether or not the loop has stepped down yet
    assert not leader.elector.renewed()


@pytest.mark.looptime
async def test_a_follower_is_never_renewed(lease_api: Any, replicas: Callable[..., Replica]) -> None:
    leader = replicas('leader')
    await until(leader.leading)
    follower = replicas('follower')
    await asyncio.sleep(5)
    assert leader.elector.renewed() and not follower.elector.renewed()


FOREVER = 2147483647  # the largest leaseDurationSeconds that the API server accepts: 68 years
CAPPED = ("The Lease ns/lease held by 'stranger' asks for leaseDurationSeconds=2147483647, more than 4 times "
          "this replica's lease duration: it is judged by 60s since it last changed (set the same "
          "settings.leader_election timings on all replicas; only the operator's service account should write "
          "the Leases in 'ns').")


@pytest.mark.looptime
@pytest.mark.parametrize('watch', [True, False])
async def test_a_strangers_lease_of_68_years_is_taken_over_after_4_lease_durations(
        lease_api: Any, replicas: Callable[..., Replica], caplog: pytest.LogCaptureFixture, watch: bool) -> None:
    caplog.set_level(logging.WARNING)
    lease_api.put('ns', 'lease', {'holderIdentity': 'stranger', 'leaseDurationSeconds': FOREVER,
                                  'renewTime': '2026-01-01T00:00:00.000000Z', 'leaseTransitions': 2})
    replica = replicas('me', watch=watch)  # watched: it sleeps until the expiry; polled: sees it unchanged
    assert await until(replica.leading) == 60  # never renewed: 4 of our 15s since it was first seen
    assert lease_api.spec('ns', 'lease')['holderIdentity'] == 'me'
    assert lease_api.spec('ns', 'lease')['leaseTransitions'] == 3
    assert [r.getMessage() for r in caplog.records] == [CAPPED]


@pytest.mark.looptime
async def test_a_lease_taken_from_the_leader_for_68_years_comes_back_after_the_cap_each_time_said(
        lease_api: Any, replicas: Callable[..., Replica], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    leader = replicas('leader')
    await until(leader.leading)
    for taken_at in [3, 70]:
        await asyncio.sleep(taken_at - asyncio.get_running_loop().time())
        lease_api.put('ns', 'lease', {'holderIdentity': 'stranger', 'leaseDurationSeconds': FOREVER})
        assert await until_cleared(leader.leading) == pytest.approx(taken_at, abs=0.2)
        assert await until(leader.leading) == pytest.approx(taken_at + 60, abs=0.2)
    assert [r.getMessage() for r in caplog.records] == [CAPPED, CAPPED]  # once per taking, not per round


@pytest.mark.looptime
async def test_a_lease_kept_renewed_by_a_stranger_is_theirs_and_said_once_not_per_renewal(
        lease_api: Any, replicas: Callable[..., Replica], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)

    async def renew_forever() -> None:
        for year in range(2990, 3100):  # a renewTime in the future, a new one each time
            lease_api.put('ns', 'lease', {'holderIdentity': 'stranger', 'leaseDurationSeconds': FOREVER,
                                          'renewTime': f'{year}-01-01T00:00:00.000000Z'})
            await asyncio.sleep(2)

    stranger = asyncio.create_task(renew_forever())
    watching, polling = replicas('watching'), replicas('polling', watch=False)
    await asyncio.sleep(200)
    stranger.cancel()
    assert not watching.leading.is_set() and not polling.leading.is_set()  # the limit: only RBAC stops this
    future = ("The Lease ns/lease held by 'stranger' has a renewTime in the future (2990-01-01T00:00:00.000000Z): "
              "the time in the Lease is ignored; it expires 60s after it last changed.")
    assert sorted(r.getMessage() for r in caplog.records) == sorted([CAPPED, future] * 2)  # one of each per replica
