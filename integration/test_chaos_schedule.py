"""
The chaos soak's fault schedule: reproducible from its seed, and shaped by the rates asked for.

Plain unit tests: no cluster is needed.
"""
import pytest

from integration.chaos import _schedule


def test_the_same_seed_gives_the_same_schedule() -> None:
    first = _schedule.make_schedule(seed=7, duration=1800)
    second = _schedule.make_schedule(seed=7, duration=1800)
    assert first == second
    assert len(first) > 100


def test_another_seed_gives_another_schedule() -> None:
    assert _schedule.make_schedule(seed=7, duration=600) != _schedule.make_schedule(seed=8, duration=600)


def test_the_schedule_is_sorted_and_within_the_duration() -> None:
    schedule = _schedule.make_schedule(seed=1, duration=600)
    moments = [fault.at for fault in schedule]
    assert moments == sorted(moments)
    assert all(0 <= moment < 600 for moment in moments)


def test_all_kinds_strike_in_a_long_soak_with_the_default_rates() -> None:
    schedule = _schedule.make_schedule(seed=1, duration=1800)
    assert {fault.kind for fault in schedule} == set(_schedule.KINDS)


def test_a_zero_rate_disables_a_kind() -> None:
    rates = dict(_schedule.DEFAULT_RATES, **{_schedule.KILL_OPERATOR: 0})
    schedule = _schedule.make_schedule(seed=1, duration=1800, rates=rates)
    assert _schedule.KILL_OPERATOR not in {fault.kind for fault in schedule}


def test_the_faults_have_the_parameters_of_their_kind() -> None:
    schedule = _schedule.make_schedule(seed=3, duration=3600)
    for fault in schedule:
        if fault.kind == _schedule.THROTTLE:
            assert fault.status == 429 and fault.seconds >= 1
        elif fault.kind == _schedule.SERVER_ERROR:
            assert fault.status in (500, 503)
        elif fault.kind in (_schedule.DELAY, _schedule.STALL_WATCH):
            assert fault.seconds > 0 and fault.status == 0
        else:
            assert fault.status == 0
        if fault.kind in _schedule.PROCESS_KINDS:
            assert fault.count == 1


def test_rates_from_the_command_line() -> None:
    assert _schedule.parse_rates('all') == dict(_schedule.DEFAULT_RATES)
    assert _schedule.parse_rates('none') == {}
    rates = _schedule.parse_rates('kill-operator=0,delay=5')
    assert rates[_schedule.KILL_OPERATOR] == 0 and rates[_schedule.DELAY] == 5
    assert rates[_schedule.THROTTLE] == _schedule.DEFAULT_RATES[_schedule.THROTTLE]


@pytest.mark.parametrize('spec', ['explode=1', 'delay', 'delay=often'])
def test_bad_rates_are_explained(spec: str) -> None:
    with pytest.raises(ValueError, match='Bad fault rate'):
        _schedule.parse_rates(spec)


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match='Unknown fault kinds'):
        _schedule.make_schedule(seed=1, duration=60, rates={'explode': 1.0})
