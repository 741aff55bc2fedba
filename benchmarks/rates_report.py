"""
The rate sweep's section of the Markdown report: per rate, the sides' latencies and what qualifies them.

Cells are medians over the repeats (min..max when they differ). A latency marked
"≥" is a lower bound: some objects had no result when the harness stopped waiting.
A creator lateness marked "behind" means that the harness itself did not keep to
the schedule at that rate: a p99 over 1 s there does not count against the side.
"""
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchmarks import capacity
from benchmarks.arrivals import LATENESS_TOLERANCE_S
from benchmarks.scenarios.rates import drain_seconds

Results = Mapping[str, Any]
Figures = Mapping[str, Any]
# (figure, label, lower-bound flag or ''): the rows of each rate, in this order.
RATE_ROWS: tuple[tuple[str, str, str], ...] = (
    ('latency_p50_ms', "latency, due time to the create handler's result, p50 (ms)", 'latency_p50_lower_bound'),
    ('latency_p99_ms', "latency, due time to the create handler's result, p99 (ms)", 'latency_p99_lower_bound'),
    ('watch_latency_p99_ms', "latency, appearance in the harness's watch to the result, p99 (ms)", ''),
    ('finalizer_latency_p50_ms', "latency, appearance in the harness's watch to the finalizer (the first step), "
                                 'p50 (ms)', ''),
    ('answer_p99_ms', 'creation requests, sent to answered, p99 (ms)', ''),
    ('unhandled', 'objects without a result when the waiting ended', ''),
    ('lateness_p99_ms', "the creator's lateness behind its schedule, p99 (ms)", ''),
    ('cpu_per_object_ms', 'operator CPU per object (ms)', ''),
    ('server_cpu_per_object_ms', 'API server + etcd CPU per object (ms)', ''),
    ('load_1min', 'load average (1 min) at the end of the step', ''),
)


def render_rates(results: Results) -> list[str]:
    """The section's lines; none if the sweep did not run."""
    rates = capacity.sweep_rates(results)
    if not rates:
        return []
    duration = float(results['options']['rate_seconds'])
    lines = [
        '', '## Rate sweep: latency under a steady arrival rate', '',
        f'Objects created at a steady rate for {duration:g} s per rate, on the same schedule for every side, '
        'each creation request sent at its due time whatever the answers to the others; '
        f'then up to {drain_seconds(duration):g} s more for the results. Latency: from the due time to the '
        "create handler's result in the harness's watch. \"≥\": a lower bound (objects without a result). "
        f'The creator is "behind" when its p99 lateness exceeds {LATENESS_TOLERANCE_S * 1000:g} ms. '
        'Capacity: the highest rate at which p99 < 1 s, and at every lower rate.',
        '',
        '| variant | rate (/s) | figure | ours | upstream | ours/upstream | bound |',
        '|---|---:|---|---:|---:|---:|---:|',
    ]
    for variant in results['options']['variants']:
        for rate in rates:
            found = {side: capacity.records(results, variant, side, rate) for side in capacity.SIDES}
            if not any(found.values()):
                continue
            for figure, label, bound_flag in RATE_ROWS:
                cells = {side: _cell(records, figure, bound_flag) for side, records in found.items()}
                medians = {side: _figure_median(records, figure) for side, records in found.items()}
                lines.append(_row(variant, f'{rate:g}', label, cells, medians))
        lines.append(_capacity_row(results, variant))
    return lines


def _capacity_row(results: Results, variant: str) -> str:
    cells: dict[str, str] = {}
    values: dict[str, float | None] = {}
    for side in capacity.SIDES:
        found = capacity.side_capacity(results, variant, side)
        cells[side] = '' if found is None else found.describe()
        values[side] = None if found is None else found.value
    return _row(variant, '', '**capacity** (/s): the highest rate with p99 < 1 s', cells, values)


def _row(variant: str, rate: str, label: str, cells: Mapping[str, str], medians: Mapping[str, float | None]) -> str:
    ours, upstream = medians['ours'], medians['upstream']
    ratio = f'{ours / upstream:.2f}' if ours is not None and upstream else ''
    return f"| {variant} | {rate} | {label} | {cells['ours']} | {cells['upstream']} | {ratio} | {cells['bare']} |"


def _cell(records: Sequence[Mapping[str, Any]], figure: str, bound_flag: str) -> str:
    figures = _completed(records)
    values = _values(figures, figure)
    text = ''
    if values:
        text = _number(statistics.median(values))
        if len(values) > 1 and min(values) != max(values):
            text += f' ({_number(min(values))}..{_number(max(values))})'
        if bound_flag and any(figures_.get(bound_flag) for figures_ in figures):
            text = '≥ ' + text
        if figure == 'lateness_p99_ms' and any(figures_.get('creator_behind') for figures_ in figures):
            text += ' **behind**'
    failed = len(records) - len(figures)
    return f'{text} (failed {failed}x)'.strip() if failed else text


def _figure_median(records: Sequence[Mapping[str, Any]], figure: str) -> float | None:
    values = _values(_completed(records), figure)
    return statistics.median(values) if values else None


def _completed(records: Sequence[Mapping[str, Any]]) -> list[Figures]:
    return [record['figures'] for record in records if record.get('ok')]


def _values(figures: Sequence[Figures], figure: str) -> list[float]:
    read: Callable[[Figures], Any] = (
        (lambda found: found['load_average_after'][0]) if figure == 'load_1min' else (lambda found: found.get(figure)))
    return [float(value) for value in map(read, figures) if value is not None]


def _number(value: float) -> str:
    if abs(value) >= 10 or value == int(value):
        return f'{value:.0f}'
    return f'{value:.2f}' if abs(value) >= 0.1 or value == 0 else f'{value:.3f}'
