"""
Leases: the pure decisions (who may hold a Lease when, what is written) and one attempt of I/O.

Inputs: Lease records and the candidate's own (loop) times; for the I/O, the fake
API server of ``conftest.py`` with its resourceVersion preconditions. Nothing
else is faked: the decisions are pure functions, the clock is passed in.
"""
import datetime
from typing import Any

import pytest

from kopf._cogs.clients import errors as apierrors
from kopf._core.engines.coordination import leases

TIMINGS = leases.LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
REF = leases.LeaseRef(namespace='ns', name='lease')
MOMENT = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)


def observed(record: Any, at: float = 100.0) -> leases.Observation:
    observation = leases.Observation()
    observation.notice(record, now=at)
    return observation


def test_no_lease_is_created() -> None:
    verdict = leases.decide(observation=observed(None), identity='me', now=100, timings=TIMINGS)
    assert verdict == leases.Verdict.CREATE


def test_own_lease_is_renewed() -> None:
    record = leases.LeaseRecord(holder='me', duration=15)
    verdict = leases.decide(observation=observed(record), identity='me', now=500, timings=TIMINGS)
    assert verdict == leases.Verdict.RENEW


@pytest.mark.parametrize('holder', ['', 'them'])
def test_a_released_or_expired_lease_is_acquired(holder: str) -> None:
    record = leases.LeaseRecord(holder=holder, duration=15)
    verdict = leases.decide(observation=observed(record, at=100), identity='me', now=115, timings=TIMINGS)
    assert verdict == leases.Verdict.ACQUIRE


def test_another_holders_lease_is_waited_for_until_it_expires() -> None:
    record = leases.LeaseRecord(holder='them', duration=15)
    observation = observed(record, at=100)
    assert leases.decide(observation=observation, identity='me', now=114.9, timings=TIMINGS) == leases.Verdict.WAIT
    assert leases.expires_in(observation=observation, now=110, timings=TIMINGS) == 5


def test_expiry_counts_from_the_last_change_seen_not_from_the_renew_time() -> None:
    far_future = '2999-01-01T00:00:00.000000Z'
    observation = observed(leases.LeaseRecord(holder='them', duration=15, renew_time=far_future), at=100)
    observation.notice(leases.LeaseRecord(holder='them', duration=15, renew_time=far_future), now=110)  # same
    assert leases.decide(observation=observation, identity='me', now=115, timings=TIMINGS) == leases.Verdict.ACQUIRE


def test_a_renewal_seen_restarts_the_expiry() -> None:
    observation = observed(leases.LeaseRecord(holder='them', duration=15, renew_time='t1'), at=100)
    observation.notice(leases.LeaseRecord(holder='them', duration=15, renew_time='t2'), now=110)
    assert leases.decide(observation=observation, identity='me', now=124, timings=TIMINGS) == leases.Verdict.WAIT
    assert leases.decide(observation=observation, identity='me', now=125, timings=TIMINGS) == leases.Verdict.ACQUIRE


@pytest.mark.parametrize('duration', [None, -5, 0])
def test_an_invalid_duration_is_judged_by_ours(duration: Any) -> None:
    observation = observed(leases.LeaseRecord(holder='them', duration=duration), at=100)
    assert leases.decide(observation=observation, identity='me', now=114, timings=TIMINGS) == leases.Verdict.WAIT
    assert leases.decide(observation=observation, identity='me', now=115, timings=TIMINGS) == leases.Verdict.ACQUIRE


def test_the_holders_own_duration_is_respected() -> None:
    observation = observed(leases.LeaseRecord(holder='them', duration=60), at=100)
    assert leases.decide(observation=observation, identity='me', now=159, timings=TIMINGS) == leases.Verdict.WAIT


def test_a_duration_of_68_years_counts_for_4_of_ours() -> None:
    record = leases.LeaseRecord(holder='stranger', duration=2147483647, renew_time='2999-01-01T00:00:00.000000Z')
    observation = observed(record, at=100)
    observation.notice(record, now=150)  # the same: not a renewal
    assert leases.expires_in(observation=observation, now=110, timings=TIMINGS) == 50
    assert leases.decide(observation=observation, identity='me', now=159.9, timings=TIMINGS) == leases.Verdict.WAIT
    assert leases.decide(observation=observation, identity='me', now=160, timings=TIMINGS) == leases.Verdict.ACQUIRE
    assert leases.effective_duration(record, TIMINGS) == leases.MAX_DURATION_FACTOR * 15 == 60
    assert leases.asked_duration(record, TIMINGS) == 2147483647


def test_a_duration_of_68_years_renewed_is_waited_for() -> None:
    observation = observed(leases.LeaseRecord(holder='stranger', duration=2147483647, renew_time='t1'), at=100)
    observation.notice(leases.LeaseRecord(holder='stranger', duration=2147483647, renew_time='t2'), now=150)
    assert leases.decide(observation=observation, identity='me', now=209.9, timings=TIMINGS) == leases.Verdict.WAIT
    assert leases.decide(observation=observation, identity='me', now=210, timings=TIMINGS) == leases.Verdict.ACQUIRE


def test_acquiring_writes_the_holder_times_and_a_transition() -> None:
    record = leases.LeaseRecord(holder='them', duration=15, acquire_time='old', transitions=3)
    spec = leases.held_spec(record, identity='me', moment=MOMENT, timings=TIMINGS)
    assert spec == {'holderIdentity': 'me', 'leaseDurationSeconds': 15,
                    'acquireTime': '2026-01-02T03:04:05.678901Z', 'renewTime': '2026-01-02T03:04:05.678901Z',
                    'leaseTransitions': 4}


def test_renewing_keeps_the_acquire_time_and_the_transitions() -> None:
    record = leases.LeaseRecord(holder='me', duration=15, acquire_time='2026-01-01T00:00:00.000000Z', transitions=3)
    spec = leases.held_spec(record, identity='me', moment=MOMENT, timings=TIMINGS)
    assert spec['acquireTime'] == '2026-01-01T00:00:00.000000Z'
    assert spec['renewTime'] == '2026-01-02T03:04:05.678901Z'
    assert spec['leaseTransitions'] == 3


def test_creating_starts_with_no_transitions() -> None:
    assert leases.held_spec(None, identity='me', moment=MOMENT, timings=TIMINGS)['leaseTransitions'] == 0


def test_releasing_clears_the_holder_and_expires_in_a_second() -> None:
    record = leases.LeaseRecord(holder='me', duration=15, transitions=3)
    assert leases.released_spec(record, moment=MOMENT) == {
        'holderIdentity': None, 'leaseDurationSeconds': 1, 'acquireTime': '2026-01-02T03:04:05.678901Z',
        'renewTime': '2026-01-02T03:04:05.678901Z', 'leaseTransitions': 3}


def test_fractional_durations_are_written_rounded_up() -> None:
    timings = leases.LeaseTimings(lease_duration=1.5, renew_deadline=1, retry_period=0.2)
    assert leases.held_spec(None, identity='me', moment=MOMENT, timings=timings)['leaseDurationSeconds'] == 2


@pytest.mark.parametrize('kwargs, message', [
    (dict(lease_duration=10, renew_deadline=10), r"lease_duration \(10\) must be longer than renew_deadline"),
    (dict(renew_deadline=2, retry_period=2), r"renew_deadline \(2\) must be longer than retry_period"),
    (dict(retry_period=0), r"settings.leader_election.retry_period must be a positive number of seconds, not 0"),
    (dict(lease_duration='15'), r"lease_duration must be a positive number of seconds, not '15'"),
])
def test_timings_that_could_overlap_two_holders_are_refused(kwargs: Any, message: str) -> None:
    with pytest.raises(leases.LeaseError, match=message):
        leases.LeaseTimings(**kwargs).check()


def test_micro_times_are_read_back() -> None:
    assert leases.parse_micro_time(leases.micro_time(MOMENT)) == MOMENT
    assert leases.parse_micro_time('garbage') is None


async def test_an_absent_lease_is_created_held(lease_api: Any) -> None:
    observation = leases.Observation()
    held = await leases.try_acquire_or_renew(lease_api.client(), REF, identity='me', observation=observation,
                                             timings=TIMINGS, now=0, moment=MOMENT)
    assert held
    assert lease_api.spec('ns', 'lease')['holderIdentity'] == 'me'


async def test_a_renewal_needs_no_read(lease_api: Any) -> None:
    client = lease_api.client()
    observation = leases.Observation()
    await leases.try_acquire_or_renew(client, REF, identity='me', observation=observation,
                                      timings=TIMINGS, now=0, moment=MOMENT)
    client.requests.clear()
    held = await leases.try_acquire_or_renew(client, REF, identity='me', observation=observation,
                                             timings=TIMINGS, now=2, moment=MOMENT)
    assert held
    assert client.requests == ['patch']


async def test_a_conflicting_update_loses_and_sees_the_winner(lease_api: Any) -> None:
    lease_api.put('ns', 'lease', {'holderIdentity': '', 'leaseDurationSeconds': 1})
    ours, theirs = leases.Observation(), leases.Observation()
    ours.notice(await leases.read_lease(lease_api.client(), REF), now=0)
    theirs.notice(await leases.read_lease(lease_api.client(), REF), now=0)
    assert await leases.try_acquire_or_renew(lease_api.client(), REF, identity='them', observation=theirs,
                                             timings=TIMINGS, now=0, moment=MOMENT)
    # Our write is based on the version read before theirs: the API server refuses it.
    written = leases.held_spec(ours.record, identity='me', moment=MOMENT, timings=TIMINGS)
    with pytest.raises(apierrors.APIConflictError):
        await leases.write_lease(lease_api.client(), REF, written, based_on=ours.record)
    held = await leases.try_acquire_or_renew(lease_api.client(), REF, identity='me', observation=ours,
                                             timings=TIMINGS, now=0, moment=MOMENT)
    assert not held
    assert ours.record is not None and ours.record.holder == 'them'
    assert lease_api.spec('ns', 'lease')['holderIdentity'] == 'them'


async def test_a_renewal_after_an_unrelated_edit_reads_and_renews(lease_api: Any) -> None:
    client = lease_api.client()
    observation = leases.Observation()
    await leases.try_acquire_or_renew(client, REF, identity='me', observation=observation,
                                      timings=TIMINGS, now=0, moment=MOMENT)
    lease_api.leases[('ns', 'lease')]['metadata']['resourceVersion'] = 'edited'  # e.g. a label added by hand
    client.requests.clear()
    held = await leases.try_acquire_or_renew(client, REF, identity='me', observation=observation,
                                             timings=TIMINGS, now=2, moment=MOMENT)
    assert held
    assert client.requests == ['patch', 'get', 'patch']


async def test_releasing_someone_elses_lease_does_nothing(lease_api: Any) -> None:
    lease_api.put('ns', 'lease', {'holderIdentity': 'them', 'leaseDurationSeconds': 15})
    observation = leases.Observation()
    observation.notice(await leases.read_lease(lease_api.client(), REF), now=0)
    released = await leases.release_lease(lease_api.client(), REF, identity='me', observation=observation,
                                          moment=MOMENT)
    assert not released
    assert lease_api.spec('ns', 'lease')['holderIdentity'] == 'them'
