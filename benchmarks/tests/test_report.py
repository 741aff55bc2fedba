"""The aggregation of the repeats and the verdicts on the targets."""
from typing import Any

import pytest

from benchmarks.report import Stats, collect, evaluate_targets, ratio, render_markdown, stats


def run(side: str, scenario: str, ok: bool = True, **figures: Any) -> dict[str, Any]:
    record: dict[str, Any] = {'scenario': scenario, 'variant': 'status', 'side': side, 'repeat': 0, 'ok': ok}
    if ok:
        record['figures'] = figures
    else:
        record['error'] = 'PhaseTimeout: too slow'
    return record


def results(*runs: dict[str, Any]) -> dict[str, Any]:
    return {
        'options': {'variants': ['status'], 'objects': 1, 'restart_objects': 1, 'idle_seconds': 1, 'repeats': 1},
        'machine': {'cpus_logical': 2, 'cpu_model': 'x', 'memory_gib': 1, 'platform': 'p', 'python': '3'},
        'versions': {}, 'started': 'now', 'duration_s': 60, 'baseline': {}, 'runs': list(runs),
    }


def test_stats_are_the_median_and_the_range() -> None:
    assert stats([3.0, 1.0, 2.0]) == Stats(median=2.0, low=1.0, high=3.0, count=3)


def test_no_values_make_no_stats() -> None:
    assert stats([]) is None


@pytest.mark.parametrize('ours, upstream, expected', [
    pytest.param(1.0, 4.0, 0.25, id='faster'),
    pytest.param(4.0, 0.0, None, id='upstream-zero'),
])
def test_the_ratio_is_ours_over_upstream(ours: float, upstream: float, expected: float | None) -> None:
    assert ratio(stats([ours]), stats([upstream])) == expected


def test_failed_repeats_give_no_figures() -> None:
    data = results(run('ours', 'burst', wall_s=1.0), run('ours', 'burst', ok=False))
    assert collect(data, 'burst', 'status', 'ours', 'wall_s') == [1.0]


def test_request_counts_by_verb_are_figures_too() -> None:
    data = results(run('ours', 'lifecycle', requests={'PATCH benchmarkeds': 3}), run('ours', 'lifecycle', requests={}))
    assert collect(data, 'lifecycle', 'status', 'ours', 'requests:PATCH benchmarkeds') == [3.0, 0.0]


def _verdicts(data: dict[str, Any]) -> dict[str, bool | None]:
    return {target.key: target.met for target in evaluate_targets(data)}


@pytest.mark.parametrize('ours, met', [pytest.param(3.0, True, id='a-third'), pytest.param(3.1, False, id='more')])
def test_the_cpu_target_is_a_third_of_upstream(ours: float, met: bool) -> None:
    data = results(run('ours', 'burst', cpu_per_object_ms=ours), run('upstream', 'burst', cpu_per_object_ms=9.0))
    assert _verdicts(data)['burst-cpu'] is met


def test_a_target_with_a_failed_side_is_not_measured() -> None:
    data = results(run('ours', 'lifecycle', requests_total=3), run('upstream', 'lifecycle', ok=False))
    assert _verdicts(data)['lifecycle-requests'] is None


@pytest.mark.parametrize('ours, bound, met', [
    pytest.param(5.0, 4.0, True, id='at-1.25x-the-bound'),
    pytest.param(5.1, 4.0, False, id='beyond'),
])
def test_the_burst_wall_time_target_is_near_the_bound(ours: float, bound: float, met: bool) -> None:
    data = results(run('ours', 'burst', wall_s=ours), run('upstream', 'burst', wall_s=100.0),
                   run('bare', 'burst', wall_s=bound))
    assert _verdicts(data)['burst-wall'] is met


@pytest.mark.parametrize('key, scenario, figure', [
    pytest.param('burst-latency-half', 'burst', 'create_latency_p99_ms', id='latency-p99'),
    pytest.param('restart-first-handling', 'restart', 'initial_wall_s', id='first-handling'),
    pytest.param('restart-rss', 'restart', 'peak_rss_mib', id='rss'),
    pytest.param('burst-large-latency-half', 'burst-large', 'create_latency_p99_ms', id='large-latency-p99'),
    pytest.param('scale-rss', 'scale', 'peak_rss_mib', id='scale-rss'),
    pytest.param('burst-rss', 'burst', 'peak_rss_mib', id='burst-rss'),
    pytest.param('burst-large-rss', 'burst-large', 'peak_rss_mib', id='burst-large-rss'),
    pytest.param('burst-defaults-rss', 'burst-defaults', 'peak_rss_mib', id='burst-defaults-rss'),
])
@pytest.mark.parametrize('ours, met', [pytest.param(5.0, True, id='half'), pytest.param(5.1, False, id='more')])
def test_the_half_of_upstream_targets(key: str, scenario: str, figure: str, ours: float, met: bool) -> None:
    ours_figures: dict[str, Any] = {figure: ours}
    upstream_figures: dict[str, Any] = {figure: 10.0}
    data = results(run('ours', scenario, **ours_figures), run('upstream', scenario, **upstream_figures))
    assert _verdicts(data)[key] is met


@pytest.mark.parametrize('ours, met', [pytest.param(6, True, id='equal'), pytest.param(7, False, id='more')])
def test_the_requests_stay_at_upstreams_floor(ours: int, met: bool) -> None:
    data = results(run('ours', 'lifecycle', requests_total=ours), run('upstream', 'lifecycle', requests_total=6))
    assert _verdicts(data)['lifecycle-requests'] is met


@pytest.mark.parametrize('cpu, requests, met', [
    pytest.param(0.0, 0, True, id='quiet'),
    pytest.param(0.0, 1, False, id='a-request'),
    pytest.param(1.0, 0, False, id='busy'),
])
def test_idle_means_no_requests_and_no_cpu(cpu: float, requests: int, met: bool) -> None:
    data = results(run('ours', 'idle', cpu_percent=cpu, requests_total=requests))
    assert _verdicts(data)['idle'] is met


def test_the_table_has_both_sides_and_their_ratio() -> None:
    data = results(run('ours', 'burst', wall_s=1.0), run('upstream', 'burst', wall_s=4.0))
    assert '| burst | status | wall time, create+update+delete (s) | 1.00 | 4.00 | 0.25 |  |' in render_markdown(data)


def test_failures_are_listed_with_their_error() -> None:
    data = results(run('upstream', 'restart', ok=False))
    assert '- restart, status, upstream, repeat 1: PhaseTimeout: too slow' in render_markdown(data)


def test_request_totals_are_derived_without_watches_and_events() -> None:
    requests = {'PATCH benchmarkeds': 4, 'PATCH benchmarkeds/status': 2, 'WATCH pods': 1, 'POST events': 9,
                'GET /apis': 1}
    data = results(run('ours', 'lifecycle', requests=requests, requests_total=17))
    assert collect(data, 'lifecycle', 'status', 'ours', 'requests_total') == [6.0]
    data['options']['objects'] = 2
    data['runs'] = [run('ours', 'burst', requests=requests, requests_per_object=8.5)]
    assert collect(data, 'burst', 'status', 'ours', 'requests_per_object') == [3.0]


def test_the_large_burst_counts_requests_per_object_by_its_own_size() -> None:
    data = results(run('ours', 'burst-large', requests={'PATCH benchmarkeds': 40}))
    data['options'].update(objects=2, large_objects=10)
    assert collect(data, 'burst-large', 'status', 'ours', 'requests_per_object') == [4.0]


def test_the_sizes_of_the_larger_scenarios_are_stated() -> None:
    data = results()
    data['options'].update(large_objects=5000, scale_objects=20000)
    assert 'burst-large 5000, scale 20000 objects' in render_markdown(data)
    assert 'burst-large —, scale — objects' in render_markdown(results())  # results from before them


def test_the_control_planes_watches_have_no_rows() -> None:
    requests = {'PATCH benchmarkeds': 4, 'WATCH pods': 1}
    markdown = render_markdown(results(run('ours', 'lifecycle', requests=requests)))
    assert '| requests: PATCH benchmarkeds |' in markdown
    assert 'WATCH' not in markdown


def test_each_sides_default_posting_has_rows_of_its_own() -> None:
    data = results(run('ours', 'burst', cpu_per_object_ms=1.0), run('upstream', 'burst', cpu_per_object_ms=3.0),
                   run('ours', 'burst-defaults', cpu_per_object_ms=2.0),
                   run('upstream', 'burst-defaults', cpu_per_object_ms=4.0))
    markdown = render_markdown(data)
    assert '| burst | status | CPU per object (ms) | 1.00 | 3.00 | 0.33 |  |' in markdown
    assert "| burst-defaults | status | each side's default posting: CPU per object (ms) | 2.00 | 4.00 | 0.50 |  |" \
        in markdown
    assert [t.ours for t in evaluate_targets(data) if t.key == 'burst-cpu'] == [1.0]  # judged like for like


@pytest.mark.parametrize('key, scenario', [
    pytest.param('burst-latency', 'burst', id='burst'),
    pytest.param('burst-large-latency', 'burst-large', id='burst-large'),
])
@pytest.mark.parametrize('ours, met', [pytest.param(10.0, True, id='equal'), pytest.param(10.1, False, id='worse')])
def test_the_latency_is_no_worse_than_upstreams(key: str, scenario: str, ours: float, met: bool) -> None:
    data = results(run('ours', scenario, create_latency_p99_ms=ours),
                   run('upstream', scenario, create_latency_p99_ms=10.0))
    assert _verdicts(data)[key] is met


def on_loops(*runs: dict[str, Any]) -> dict[str, Any]:
    data = results(*runs)
    data['options']['loops'] = ['asyncio', 'uvloop']
    return data


@pytest.mark.parametrize('scenario', ['burst-uvloop', 'burst-defaults-uvloop'])
@pytest.mark.parametrize('ours, met', [pytest.param(3.0, True, id='a-third'), pytest.param(3.1, False, id='more')])
def test_the_cpu_target_holds_on_every_loop(scenario: str, ours: float, met: bool) -> None:
    data = on_loops(run('ours', scenario, cpu_per_object_ms=ours), run('upstream', scenario, cpu_per_object_ms=9.0),
                    run('ours', 'burst', cpu_per_object_ms=100.0), run('upstream', 'burst', cpu_per_object_ms=9.0))
    verdicts = _verdicts(data)
    assert verdicts[f'{scenario}-cpu'] is met
    assert verdicts['burst-cpu'] is False  # each loop judged by its own runs
    assert verdicts[f'{scenario}-rss'] is None  # measured with no RSS: not judged


def test_the_bursts_on_other_loops_have_rows_labelled_with_the_loop() -> None:
    data = on_loops(run('ours', 'burst-uvloop', cpu_per_object_ms=1.0, requests={'PATCH benchmarkeds': 6}),
                    run('upstream', 'burst-uvloop', cpu_per_object_ms=4.0))
    markdown = render_markdown(data)
    assert '| burst-uvloop | status | uvloop: CPU per object (ms) | 1.00 | 4.00 | 0.25 |  |' in markdown
    assert collect(data, 'burst-uvloop', 'status', 'ours', 'requests_per_object') == [6.0]


def test_results_from_before_the_loops_have_no_rows_of_other_loops() -> None:
    data = results(run('ours', 'burst', cpu_per_object_ms=1.0), run('upstream', 'burst', cpu_per_object_ms=4.0))
    assert not any('uvloop' in target.key for target in evaluate_targets(data))
    assert 'uvloop' not in render_markdown(data)


def test_a_runs_note_is_under_the_title() -> None:
    data = results(run('ours', 'burst', wall_s=1.0))
    assert render_markdown(data).startswith('# Benchmarks: ours vs upstream Kopf\n\nMachine:')
    data['note'] = 'Indicative only: the machine was shared.'
    assert render_markdown(data).startswith('# Benchmarks: ours vs upstream Kopf\n\n'
                                            'Indicative only: the machine was shared.\n\nMachine:')
