"""
The rate sweep: its schedule, the open-loop creator, the latencies, the capacity rule, the report's rows.

Everything but the last test is pure: constructed timings, no API server, no timed
assertions. The last one runs the sweep's command at a tiny size against the local
control plane with every side, and asserts only that each side completed and that
the report has the sweep's rows (the figures of a tiny run on a shared machine mean nothing).
"""
import asyncio
import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from benchmarks import capacity, runner
from benchmarks.__main__ import _rates
from benchmarks.arrivals import Arrival, Schedule, ScheduleError, censored_percentile, create_on_schedule, summarize
from benchmarks.capacity import Capacity, RatePoint, at_least, capacity_of
from benchmarks.report import evaluate_targets, render_markdown
from benchmarks.scenarios.rates import kind_of, rate_of

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SIDES = ('ours', 'upstream', 'bare')

# --- The schedule ---


def test_the_schedule_is_steady_and_fixed_in_advance() -> None:
    schedule = Schedule(rate=4, duration=2)
    assert schedule.count == 8
    assert schedule.offsets == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
    assert Schedule(rate=4, duration=2).offsets == schedule.offsets  # the same for every side


def test_a_fractional_rate_has_whole_objects() -> None:
    assert Schedule(rate=0.1, duration=30).count == 3
    assert Schedule(rate=2.5, duration=1).offsets == [0.0, 0.4]


@pytest.mark.parametrize('rate, duration, message', [
    pytest.param(0, 10, 'rate must be a positive', id='zero-rate'),
    pytest.param(float('nan'), 10, 'rate must be a positive', id='nan-rate'),
    pytest.param(5, -1, 'duration must be a positive', id='negative-duration'),
    pytest.param(0.1, 5, 'less than one object', id='no-object'),
])
def test_a_schedule_without_objects_is_refused(rate: float, duration: float, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        Schedule(rate, duration)


def test_the_rates_are_parsed_ascending_and_checked() -> None:
    assert _rates('20, 5,10,5', duration=2) == (5.0, 10.0, 20.0)
    assert _rates('', duration=2) == ()
    with pytest.raises(SystemExit, match="'x' is not a number"):
        _rates('5,x', duration=2)
    with pytest.raises(SystemExit, match='less than one object'):
        _rates('0.1', duration=2)


def test_each_rate_is_a_session_of_its_own_after_the_others() -> None:
    assert kind_of(2.5) == 'rate-2p5' and rate_of('rate-2p5') == 2.5
    alone = runner.Options(rates=(10.0, 5.0), scenario='rates')
    assert runner._kinds(alone) == [('rate-5', 'asyncio'), ('rate-10', 'asyncio')]
    everything = runner.Options(rates=(5.0,), large_objects=0, scale_objects=0, loops=('asyncio',))
    assert runner._kinds(everything) == [('churn', 'asyncio'), ('restart', 'asyncio'), ('defaults', 'asyncio'),
                                         ('rate-5', 'asyncio')]


# --- The creator ---


async def test_the_creator_never_waits_for_an_answer() -> None:
    sent: list[int] = []
    all_sent = asyncio.Event()

    async def create(index: int) -> None:  # answers only once every creation is sent: a waiting creator would hang
        sent.append(index)
        if len(sent) == 5:
            all_sent.set()
        await all_sent.wait()

    found = await asyncio.wait_for(create_on_schedule(create, Schedule(500, 0.01), answer_timeout=30), timeout=30)
    assert sent == [0, 1, 2, 3, 4]
    assert all(arrival.error is None and arrival.answered is not None for arrival in found)
    assert [arrival.due for arrival in found] == sorted(arrival.due for arrival in found)


async def test_a_refused_or_unanswered_creation_is_recorded_and_the_schedule_goes_on() -> None:
    async def create(index: int) -> None:
        if index == 0:
            raise RuntimeError('refused')
        if index == 1:
            await asyncio.Event().wait()  # never answered

    found = await asyncio.wait_for(create_on_schedule(create, Schedule(500, 0.006), answer_timeout=0.2), timeout=30)
    assert [arrival.error for arrival in found] == ['RuntimeError: refused', 'no answer within 0.2 s', None]
    assert all(arrival.sent is not None for arrival in found)


# --- The latencies ---


def test_the_percentile_of_exact_values_is_exact() -> None:
    values = [(float(value), False) for value in range(1, 101)]
    assert censored_percentile(values, 99) == (99.0, False)


def test_objects_without_a_result_make_a_lower_bound_only_at_or_below_the_rank() -> None:
    handled = [(0.1, False)] * 99
    assert censored_percentile([*handled, (20.0, True)], 99) == (0.1, False)  # above the rank: it cannot shift it
    assert censored_percentile([*handled[:98], (20.0, True), (20.0, True)], 99) == (20.0, True)


def arrival(index: int, due: float, *, lateness: float = 0.0, answer: float = 0.01, error: str | None = None
            ) -> Arrival:
    sent = due + lateness
    return Arrival(index, due, sent=sent, answered=None if error else sent + answer, error=error)


def summary(arrivals: list[Arrival], handled: dict[str, float], *, ended: float = 100.0) -> dict[str, Any]:
    names = [f'obj-{arrival.index}' for arrival in arrivals]
    appeared = {name: arrivals[index].due + 0.05 for index, name in enumerate(names)}
    finalized = {name: arrivals[index].due + 0.1 for index, name in enumerate(names)}
    return summarize(arrivals, names=names, appeared=appeared, handled=handled, finalized=finalized, ended=ended)


def test_the_latency_runs_from_the_due_time_to_the_handlers_result() -> None:
    arrivals = [arrival(0, 10.0), arrival(1, 10.5, lateness=0.02)]
    figures = summary(arrivals, {'obj-0': 10.3, 'obj-1': 11.0})
    assert figures['latency_p50_ms'] == pytest.approx(300)
    assert figures['latency_p99_ms'] == pytest.approx(500)  # the creator's lateness is inside, not subtracted
    assert figures['watch_latency_p99_ms'] == pytest.approx(450)  # the bursts' measure: from the watch
    assert figures['finalizer_latency_p50_ms'] == pytest.approx(50)  # the first step, from the watch too
    assert figures['answer_p99_ms'] == pytest.approx(10)
    assert not figures['latency_p99_lower_bound'] and figures['unhandled'] == 0
    assert not figures['creator_behind']


def test_an_object_without_a_result_counts_until_the_waiting_ended() -> None:
    arrivals = [arrival(0, 10.0), arrival(1, 10.5), arrival(2, 11.0, error='HTTP 500: boom')]
    figures = summary(arrivals, {'obj-0': 10.2}, ended=40.0)
    assert figures['latency_p99_ms'] == pytest.approx(29_500) and figures['latency_p99_lower_bound']
    assert figures['unhandled'] == 2 and figures['create_errors'] == 1


@pytest.mark.parametrize('lateness, behind', [pytest.param(0.1, False, id='on-time'),
                                              pytest.param(0.15, True, id='late')])
def test_a_creator_late_by_more_than_a_tenth_of_the_threshold_is_behind(lateness: float, behind: bool) -> None:
    arrivals = [arrival(0, 10.0, lateness=lateness)]
    figures = summary(arrivals, {'obj-0': 10.5})
    assert figures['lateness_p99_ms'] == pytest.approx(lateness * 1000)
    assert figures['creator_behind'] is behind


# --- The capacity rule ---


def point(rate: float, p99: float | None, *, behind: bool = False, lower_bound: bool = False) -> RatePoint:
    return RatePoint(rate, p50_ms=p99, p99_ms=p99, lower_bound=lower_bound, creator_behind=behind,
                     failed=0 if p99 is not None else 1)


@pytest.mark.parametrize('points, expected, text', [
    pytest.param([point(5, 200), point(10, 900), point(20, 1500), point(40, 300)], Capacity(10, 20, 5), '10',
                 id='saturated'),
    pytest.param([point(10, 900), point(5, 200)], Capacity(10, None, 5), '≥ 10', id='never-saturated'),
    pytest.param([point(5, 1000), point(10, 100)], Capacity(0, 5, 5), '< 5', id='not-even-the-lowest'),
    pytest.param([point(5, 200), point(10, 3000, behind=True)], Capacity(5, None, 5), '≥ 5', id='creator-behind'),
    pytest.param([point(5, 200), point(10, None)], Capacity(5, None, 5), '≥ 5', id='failed'),
    pytest.param([point(5, 200), point(10, 800, lower_bound=True)], Capacity(5, 10, 5), '5', id='lower-bound'),
    pytest.param([point(5, 200), point(10, 300, behind=True)], Capacity(10, None, 5), '≥ 10', id='behind-but-under'),
])
def test_the_capacity_is_the_highest_rate_under_one_second_at_every_lower_rate(
        points: list[RatePoint], expected: Capacity, text: str) -> None:
    found = capacity_of(points)
    assert found == expected
    assert found.describe() == text


def test_no_sweep_has_no_capacity() -> None:
    assert capacity_of([]) is None


@pytest.mark.parametrize('ours, other, share, met', [
    pytest.param(Capacity(40, 80, 5), Capacity(20, 40, 5), 2.0, True, id='exact-twice'),
    pytest.param(Capacity(20, 40, 5), Capacity(20, 40, 5), 2.0, False, id='exact-equal'),
    pytest.param(Capacity(80, None, 5), Capacity(20, 40, 5), 2.0, True, id='ours-unsaturated-beyond'),
    pytest.param(Capacity(40, None, 5), Capacity(20, 40, 5), 2.0, None, id='ours-unsaturated-short'),
    pytest.param(Capacity(20, 40, 5), Capacity(80, None, 5), 0.8, False, id='bound-unsaturated-beyond'),
    pytest.param(Capacity(80, 160, 5), Capacity(80, None, 5), 0.8, None, id='bound-unsaturated-close'),
    pytest.param(Capacity(10, 20, 5), Capacity(0, 5, 5), 2.0, True, id='upstream-below-the-lowest'),
    pytest.param(Capacity(5, 10, 5), Capacity(0, 5, 5), 2.0, None, id='both-low'),
    pytest.param(None, Capacity(0, 5, 5), 2.0, None, id='not-run'),
])
def test_the_targets_are_judged_on_what_the_sweep_proves(
        ours: Capacity | None, other: Capacity | None, share: float, met: bool | None) -> None:
    assert at_least(ours, other, share) is met


# --- The report ---


def step(side: str, rate: float, p99: float, *, ok: bool = True, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {'scenario': 'rates', 'variant': 'status', 'side': side, 'repeat': 0, 'rate': rate,
                              'ok': ok}
    if not ok:
        record['error'] = 'OperatorDied: exited with 1'
        return record
    record['figures'] = {
        'latency_p50_ms': p99 / 2, 'latency_p50_lower_bound': False, 'latency_p99_ms': p99,
        'latency_p99_lower_bound': False, 'watch_latency_p99_ms': p99 - 10, 'answer_p99_ms': 12.0,
        'unhandled': 0, 'lateness_p99_ms': 3.0, 'creator_behind': False, 'cpu_per_object_ms': 4.0,
        'server_cpu_per_object_ms': 20.0, 'load_average_before': [3.0, 2.0, 1.0],
        'load_average_after': [4.0, 2.0, 1.0], **extra,
    }
    return record


def sweep(*runs: dict[str, Any], scenario: str = 'rates') -> dict[str, Any]:
    return {
        'options': {'variants': ['status'], 'objects': 1, 'restart_objects': 1, 'idle_seconds': 1, 'repeats': 1,
                    'rates': [5.0, 10.0], 'rate_seconds': 20.0, 'scenario': scenario},
        'machine': {'cpus_logical': 2, 'cpu_model': 'x', 'memory_gib': 1, 'platform': 'p', 'python': '3'},
        'versions': {}, 'started': 'now', 'duration_s': 60, 'baseline': {}, 'runs': list(runs),
        'load_average': {'start': [9.5, 8.0, 7.0], 'end': [10.25, 8.5, 7.5]},
    }


def test_the_sweep_has_rows_per_rate_and_a_capacity_per_side() -> None:
    markdown = render_markdown(sweep(
        step('ours', 5, 300), step('upstream', 5, 400), step('bare', 5, 100),
        step('ours', 10, 600), step('upstream', 10, 15000, latency_p99_lower_bound=True), step('bare', 10, 200),
    ))
    assert "| status | 5 | latency, due time to the create handler's result, p99 (ms) | 300 | 400 | 0.75 | 100 |" \
        in markdown
    assert "| status | 10 | latency, due time to the create handler's result, p99 (ms) | 600 | ≥ 15000 | 0.04 | 200 |" \
        in markdown
    assert '| status |  | **capacity** (/s): the highest rate with p99 < 1 s | ≥ 10 | 5 | 2.00 | ≥ 10 |' in markdown
    assert '| status | 5 | load average (1 min) at the end of the step | 4 | 4 | 1.00 | 4 |' in markdown
    assert 'Load average (1, 5, 15 min) on 2 CPUs: 9.5, 8.0, 7.0 at the start, 10.2, 8.5, 7.5 at the end.' \
        in markdown


def test_a_creator_behind_and_a_failed_step_are_shown() -> None:
    markdown = render_markdown(sweep(step('ours', 5, 300, lateness_p99_ms=250.0, creator_behind=True),
                                     step('upstream', 5, 0, ok=False)))
    assert "| status | 5 | the creator's lateness behind its schedule, p99 (ms) | 250 **behind** | (failed 1x) |" \
        in markdown
    assert '- rates, status, upstream, repeat 1: OperatorDied: exited with 1' in markdown


def test_the_sweep_alone_reports_only_its_own_targets() -> None:
    data = sweep(step('ours', 5, 300), step('upstream', 5, 1200), step('bare', 5, 100),
                 step('ours', 10, 600), step('bare', 10, 1100))
    markdown = render_markdown(data)
    verdicts = {target.key: target.met for target in evaluate_targets(data)}
    assert verdicts['rates-capacity-upstream'] is True  # at least 10/s against less than 5/s
    assert verdicts['rates-capacity-bound'] is True  # at least 10/s against 5/s
    assert "≥ 2 times upstream's | status | 10 | 0.00 | 5.00 | yes |" in markdown
    assert 'burst: CPU per object' not in markdown and '| scenario | variant | figure |' not in markdown


def test_a_run_without_the_sweep_has_neither_its_rows_nor_its_targets() -> None:
    data = sweep()
    data['options'].update(rates=[], scenario='all')
    assert 'Rate sweep' not in render_markdown(data)
    assert not [target for target in evaluate_targets(data) if target.key.startswith('rates-')]
    del data['options']['rates']  # the results from before the sweep
    assert not capacity.verdicts(data, 'status')


# --- The command, at a tiny size, against the local control plane ---


def test_the_sweeps_command_runs_every_side(tmp_path: pathlib.Path) -> None:
    out = tmp_path / 'rates'
    subprocess.run([sys.executable, '-m', 'benchmarks', 'smoke', '--scenario', 'rates', '--rates', '4',
                    '--duration', '1', '--sides', ','.join(SIDES), '--out', str(out)],
                   cwd=REPO_ROOT, check=True, timeout=600)
    results = json.loads(out.with_suffix('.json').read_text())
    steps = {record['side']: record for record in results['runs']}
    assert sorted(steps) == sorted(SIDES)
    failed = [f"{record['side']}: {record['error']}\n{record.get('log_tail', '')}"
              for record in steps.values() if not record['ok']]
    assert not failed, '\n\n'.join(failed)
    assert all(record['rate'] == 4.0 and record['figures']['objects'] == 4 for record in steps.values())
    markdown = out.with_suffix('.md').read_text()
    assert '**capacity** (/s)' in markdown and 'rate sweep: capacity' in markdown
