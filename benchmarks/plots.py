"""
The run's pictures, beside its Markdown: what people would rather look at than read.

- Per burst (``burst``, ``burst-large``, their reruns, ...) and CRD variant: each side's
  distribution of the latency from an object's creation to its create handler's result,
  as the share of objects handled within each latency (one line per side and repeat).
- Per variant, the rate sweep: the p50 and p99 latency against the arrival rate, per side
  (medians over the repeats; a hollow marker is a lower bound: objects had no result yet).

They are drawn with matplotlib's Agg backend (no display needed) into small PNGs named
``<out>-<scenario>-<variant>.png``; :func:`links` gives the Markdown that shows them.
``python -m benchmarks plot RESULTS.json`` draws them again from a saved run.
"""
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use('Agg')  # before pyplot: files only, never a window
import matplotlib.pyplot as plt
from matplotlib import ticker

from benchmarks import capacity

Results = Mapping[str, Any]
CDF_FIGURE = 'create_latency_cdf_ms'  # written by the bursts since the pictures exist
SIDE_COLORS = {'ours': '#1f77b4', 'upstream': '#ff7f0e', 'bare': '#7f7f7f', 'go': '#2ca02c',
               'ours-metrics': '#9467bd'}
SIZE_INCHES = (7.5, 4.5)
DPI = 100  # 750x450 pixels: a few tens of KB per picture


def draw(results: Results, out: pathlib.Path) -> list[pathlib.Path]:
    """Draw every picture the results have data for; the paths written."""
    written: list[pathlib.Path] = []
    for variant in results['options']['variants']:
        for scenario in _burst_scenarios(results, variant):
            path = picture_path(out, scenario, variant)
            _draw_burst(results, scenario, variant, path)
            written.append(path)
        if _sweep_points(results, variant):
            path = picture_path(out, capacity.SCENARIO, variant)
            _draw_sweep(results, variant, path)
            written.append(path)
    return written


def picture_path(out: pathlib.Path, scenario: str, variant: str) -> pathlib.Path:
    return out.parent / f'{out.name}-{scenario}-{variant}.png'


def links(results: Results, out: pathlib.Path) -> list[str]:
    """The Markdown section that shows the pictures drawn for these results (those that exist), or nothing."""
    lines: list[str] = []
    for variant in results['options']['variants']:
        for scenario in [*_burst_scenarios(results, variant), capacity.SCENARIO]:
            path = picture_path(out, scenario, variant)
            if path.exists():
                what = 'the rate sweep' if scenario == capacity.SCENARIO else f'{scenario}: latency distribution'
                lines += ['', f'![{what}, {variant}]({path.name})']
    return ['', '## Pictures', *lines] if lines else []


def _burst_scenarios(results: Results, variant: str) -> list[str]:
    """The bursts with latency distributions, in the order they ran."""
    found = [record['scenario'] for record in results.get('runs', [])
             if record.get('ok') and record['variant'] == variant and CDF_FIGURE in record['figures']]
    return list(dict.fromkeys(found))


def _draw_burst(results: Results, scenario: str, variant: str, path: pathlib.Path) -> None:
    figure, axes = plt.subplots(figsize=SIZE_INCHES)
    labelled: set[str] = set()
    for record in results['runs']:
        if not (record.get('ok') and (record['scenario'], record['variant']) == (scenario, variant)):
            continue
        latencies = record['figures'].get(CDF_FIGURE)
        if not latencies:
            continue
        side = record['side']
        axes.step([max(value, 0.1) for value in latencies], range(len(latencies)), where='post',
                  color=SIDE_COLORS.get(side), label=None if side in labelled else side, linewidth=1.5)
        labelled.add(side)
    objects = _objects(results, scenario)
    axes.set(xscale='log', xlabel="latency, creation to the create handler's result (ms, log scale)",
             ylabel='objects handled within it (%)', ylim=(0, 100.5),
             title=f'{scenario}{objects}, variant {variant}: latency distribution per side')
    for share in (50, 99):
        axes.axhline(share, color='#cccccc', linewidth=0.8, zorder=0)
    axes.grid(True, which='major', axis='x', color='#eeeeee')
    _plain_numbers(axes.xaxis)
    axes.legend(loc='lower right')
    _save(figure, path)


def _draw_sweep(results: Results, variant: str, path: pathlib.Path) -> None:
    figure, axes = plt.subplots(figsize=SIZE_INCHES)
    for side, points in _sweep_points(results, variant).items():
        color = SIDE_COLORS.get(side)
        for attribute, style, label in (('p99_ms', '-', f'{side} p99'), ('p50_ms', '--', f'{side} p50')):
            measured = [point for point in points if getattr(point, attribute) is not None]
            axes.plot([point.rate for point in measured], [getattr(point, attribute) for point in measured],
                      style, color=color, label=label, linewidth=1.5)
            for point in measured:  # hollow: a lower bound (objects without a result when the waiting ended)
                bound = attribute == 'p99_ms' and point.lower_bound
                axes.plot(point.rate, getattr(point, attribute), 'o', color=color, markersize=5,
                          markerfacecolor='none' if bound else color)
    axes.axhline(capacity.THRESHOLD_MS, color='#d62728', linewidth=0.8, linestyle=':')
    axes.set(yscale='log', xlabel='arrival rate (objects/s)', ylabel="latency, due time to the result (ms, log)",
             title=f'rate sweep, variant {variant}: p50 (dashed) and p99 (solid); the 1 s line dotted')
    axes.grid(True, which='major', color='#eeeeee')
    _plain_numbers(axes.yaxis)
    axes.legend(fontsize='small', ncol=2)
    _save(figure, path)


def _sweep_points(results: Results, variant: str) -> dict[str, list[capacity.RatePoint]]:
    sides = list(dict.fromkeys(record['side'] for record in results.get('runs', [])
                               if record['scenario'] == capacity.SCENARIO and record['variant'] == variant))
    found: dict[str, list[capacity.RatePoint]] = {}
    for side in sides:
        points = [capacity.rate_point(results, variant, side, rate) for rate in capacity.sweep_rates(results)]
        measured = [point for point in points if point is not None and point.p99_ms is not None]
        if measured:
            found[side] = measured
    return found


def _objects(results: Results, scenario: str) -> str:
    option = 'large_objects' if scenario.startswith('burst-large') else 'objects'
    count = results['options'].get(option)
    return f' of {count} objects' if count else ''


def _plain_numbers(axis: Any) -> None:
    """Milliseconds as 30, 200, 1000 on a log scale, not as powers of ten (3 times 10 to the 1)."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f'{value:g}'))
    # Between the powers of ten, only 2, 3 and 5 (and their tens): all of them would overlap.
    axis.set_minor_formatter(ticker.FuncFormatter(lambda value, _: f'{value:g}' if f'{value:g}'[0] in '235' else ''))


def _save(figure: Any, path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)


def describe(paths: Sequence[pathlib.Path]) -> str:
    """For the command's output: the pictures' names."""
    return ', '.join(path.name for path in paths) or 'none (no latencies in these results)'
