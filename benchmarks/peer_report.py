"""
The report's section on the Go peer: ours (and upstream) against a minimal controller-runtime operator.

Performance-minded users pick Go over Python for operators; the Go peer (``gopeer/``) does
the same visible work as the Python sides with controller-runtime's informer cache and work
queue, so the ratios ours/go say what choosing this framework costs against that choice:
CPU per object, peak RSS, latency. Cells are medians over the repeats; a ratio is the
side's median over the Go peer's (2.00: twice the Go peer's figure). For the capacity, the
ratio is of the capacities themselves (higher is better there).
"""
import statistics
from collections.abc import Mapping
from typing import Any

from benchmarks import capacity

PEER = 'go'
Results = Mapping[str, Any]
# (scenario, figure, label): what decides the choice first, then the rest.
ROWS: tuple[tuple[str, str, str], ...] = (
    ('burst', 'cpu_per_object_ms', 'CPU per object (ms)'),
    ('burst', 'peak_rss_mib', 'peak RSS (MiB)'),
    ('burst', 'create_latency_p50_ms', "latency, creation to the create handler's result, p50 (ms)"),
    ('burst', 'create_latency_p99_ms', "latency, creation to the create handler's result, p99 (ms)"),
    ('burst', 'finalizer_latency_p50_ms', 'latency, creation to the finalizer, p50 (ms)'),
    ('burst', 'wall_s', 'wall time, create+update+delete (s)'),
    ('burst', 'requests_per_object', 'requests per object (no events)'),
    ('burst', 'server_cpu_per_object_ms', 'API server + etcd CPU per object (ms)'),
    ('burst-large', 'cpu_per_object_ms', 'CPU per object (ms)'),
    ('burst-large', 'peak_rss_mib', 'peak RSS (MiB)'),
    ('burst-large', 'create_latency_p50_ms', "latency, creation to the create handler's result, p50 (ms)"),
    ('burst-large', 'create_latency_p99_ms', "latency, creation to the create handler's result, p99 (ms)"),
    ('lifecycle', 'startup_s', 'start-up on an empty namespace until idle (s)'),
    ('restart', 'initial_cpu_s', 'first handling of all objects, CPU (s)'),
    ('restart', 'initial_wall_s', 'first handling of all objects, wall time (s)'),
    ('restart', 'cpu_s', 'start over handled objects, CPU until idle (s)'),
    ('restart', 'peak_rss_mib', 'start over handled objects, peak RSS (MiB)'),
    ('idle', 'cpu_percent', 'CPU while idle (% of one core)'),
    ('scale', 'peak_rss_mib', 'peak RSS with all objects watched (MiB)'),
    ('scale', 'cpu_s', 'CPU of the start over all objects (s)'),
)
RATE_ROWS: tuple[tuple[str, str], ...] = (
    ('latency_p50_ms', "latency, due time to the create handler's result, p50 (ms)"),
    ('latency_p99_ms', "latency, due time to the create handler's result, p99 (ms)"),
    ('cpu_per_object_ms', 'operator CPU per object (ms)'),
)
COLUMNS = ('ours', 'upstream', 'bare')


def render_peer(results: Results) -> list[str]:
    """The section's lines; none if the Go peer did not run."""
    if not any(record['side'] == PEER for record in results.get('runs', [])):
        return []
    lines = [
        '', '## Against the Go peer (controller-runtime)', '',
        'The Go peer: a minimal controller-runtime operator (`benchmarks/gopeer/`) with the same visible '
        'results as the other sides. Ratios: the side\'s median over the Go peer\'s (2.00: twice its figure); '
        'for the capacity, of the capacities when both are exact (higher is better).',
        '', '| scenario | variant | figure | ours | upstream | bound | go | ours/go | upstream/go |',
        '|---|---|---|---:|---:|---:|---:|---:|---:|',
    ]
    for variant in results['options']['variants']:
        for scenario, figure, label in ROWS:
            medians = {side: _median(_values(results, scenario, variant, side, figure))
                       for side in (*COLUMNS, PEER)}
            if medians[PEER] is not None and medians['ours'] is not None:
                lines.append(_row(scenario, variant, label, {side: _number(value) for side, value in medians.items()},
                                  medians))
        lines += _rate_rows(results, variant)
    return lines


def _rate_rows(results: Results, variant: str) -> list[str]:
    lines: list[str] = []
    for rate in capacity.sweep_rates(results):
        for figure, label in RATE_ROWS:
            found = {side: capacity.records(results, variant, side, rate) for side in (*COLUMNS, PEER)}
            figures = {side: [record['figures'] for record in records if record.get('ok')]
                       for side, records in found.items()}
            medians = {side: _median([float(f[figure]) for f in listed if f.get(figure) is not None])
                       for side, listed in figures.items()}
            if medians[PEER] is None or medians['ours'] is None:
                continue
            cells = {side: _rate_cell(figures[side], figure, medians[side]) for side in medians}
            lines.append(_row(f'rates, {rate:g}/s', variant, label, cells, medians))
    if capacity.sweep_rates(results):
        capacities = {side: capacity.side_capacity(results, variant, side) for side in (*COLUMNS, PEER)}
        cells = {side: '' if found is None else found.describe() for side, found in capacities.items()}
        # A ratio of two bounds ("≥ 28" and "≥ 28") would mean nothing: only exact capacities have one.
        values = {side: found.value if found is not None and found.exact else None
                  for side, found in capacities.items()}
        lines.append(_row('rates', variant, '**capacity** (/s): the highest rate with p99 < 1 s', cells, values))
    return lines


def _rate_cell(figures: list[Mapping[str, Any]], figure: str, median: float | None) -> str:
    """The median, marked "≥" if it is a lower bound in some repeat (objects without a result)."""
    if median is None:
        return ''
    bound_flag = figure.removesuffix('_ms') + '_lower_bound'  # latency_p99_ms -> latency_p99_lower_bound
    return ('≥ ' if any(found.get(bound_flag) for found in figures) else '') + _number(median)


def _row(scenario: str, variant: str, label: str, cells: Mapping[str, str],
         medians: Mapping[str, float | None]) -> str:
    ratios = [_ratio(medians[side], medians[PEER]) for side in ('ours', 'upstream')]
    row = [scenario, variant, label, *(cells[side] for side in (*COLUMNS, PEER)), *ratios]
    return '| ' + ' | '.join(row) + ' |'


def _values(results: Results, scenario: str, variant: str, side: str, figure: str) -> list[float]:
    return [float(record['figures'][figure]) for record in results.get('runs', [])
            if (record['scenario'], record['variant'], record['side']) == (scenario, variant, side)
            and record.get('ok') and record['figures'].get(figure) is not None]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _ratio(value: float | None, peer: float | None) -> str:
    return '' if value is None or not peer else f'{value / peer:.2f}'


def _number(value: float | None) -> str:
    if value is None:
        return ''
    if abs(value) >= 100:
        return f'{value:.0f}'
    if abs(value) >= 10:
        return f'{value:.1f}'
    return f'{value:.2f}' if abs(value) >= 0.1 or value == 0 else f'{value:.3f}'
