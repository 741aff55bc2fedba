"""
The results as a Markdown table: each figure's median and spread per side, the ratio ours/upstream, the targets.

The spread is the range (min..max) over the repeats. The bound column is the
``bare`` side: no framework, the fewest requests for the same visible results.
"""
import dataclasses
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchmarks import capacity, loops, metrics, pinning
from benchmarks.peer_report import render_peer
from benchmarks.rates_report import render_rates

Results = Mapping[str, Any]

# (figure, label): the rows of either burst (of --objects and of --large-objects).
BURST_ROWS: tuple[tuple[str, str], ...] = (
    ('wall_s', 'wall time, create+update+delete (s)'),
    ('create_wall_s', 'wall time, create (s)'),
    ('create_action_s', "of which the harness's creation requests, until all answered (s)"),
    ('update_wall_s', 'wall time, update (s)'),
    ('delete_wall_s', 'wall time, delete (s)'),
    ('cpu_s', 'CPU, all phases (s)'),
    ('cpu_per_object_ms', 'CPU per object (ms)'),
    ('server_cpu_per_object_ms', 'API server + etcd CPU per object, all phases (ms)'),
    ('requests_per_object', 'requests per object (no events)'),
    ('events_per_object', 'k8s-events posted per object'),
    ('peak_rss_mib', 'peak RSS (MiB)'),
    ('create_latency_p50_ms', "latency, creation to the create handler's result, p50 (ms)"),
    ('create_latency_p99_ms', "latency, creation to the create handler's result, p99 (ms)"),
    ('finalizer_latency_p50_ms', 'latency, creation to the finalizer (the first step), p50 (ms)'),
    ('finalizer_latency_p99_ms', 'latency, creation to the finalizer (the first step), p99 (ms)'),
)
# (scenario, figure, label): the rows of the table, in this order; request counts by verb follow them.
ROWS: tuple[tuple[str, str, str], ...] = (
    *(('burst', figure, label) for figure, label in BURST_ROWS),
    ('burst-defaults', 'wall_s', "each side's default posting: wall time, create+update+delete (s)"),
    ('burst-defaults', 'cpu_per_object_ms', "each side's default posting: CPU per object (ms)"),
    ('burst-defaults', 'events_per_object', "each side's default posting: k8s-events posted per object"),
    ('lifecycle', 'requests_total', 'requests, create→update→delete (no events)'),
    ('lifecycle', 'events', 'k8s-events posted'),
    ('lifecycle', 'startup_s', 'start-up on an empty namespace until idle (s)'),
    ('restart', 'wall_s', 'wall time until idle (s)'),
    ('restart', 'cpu_s', 'CPU until idle (s)'),
    ('restart', 'peak_rss_mib', 'peak RSS (MiB)'),
    ('restart', 'requests_total', 'requests until idle (no events)'),
    ('restart', 'initial_wall_s', 'first handling of all objects, wall time (s)'),
    ('restart', 'initial_cpu_s', 'first handling of all objects, CPU (s)'),
    ('restart', 'initial_server_cpu_s', 'first handling of all objects, API server + etcd CPU (s)'),
    ('idle', 'cpu_percent', 'CPU (% of one core)'),
    ('idle', 'requests_total', 'requests while idle'),
    ('idle', 'peak_rss_mib', 'peak RSS (MiB)'),
    *(('burst-large', figure, label) for figure, label in BURST_ROWS),
    ('scale', 'peak_rss_mib', 'peak RSS with all objects watched (MiB)'),
    ('scale', 'cpu_s', 'CPU of the start: the initial listing until idle (s)'),
    ('scale', 'wall_s', 'wall time of the start until idle (s)'),
    ('scale', 'requests_total', 'requests of the start (no events)'),
    ('scale', 'initial_wall_s', 'first handling of all objects, wall time (s)'),
    ('scale', 'initial_cpu_s', 'first handling of all objects, CPU (s)'),
)
# The rows of the bursts run again on each other event loop (the scenario's name gets the loop as a suffix).
RERUN_ROWS: tuple[tuple[str, str, str], ...] = (
    ('burst', 'wall_s', 'wall time, create+update+delete (s)'),
    ('burst', 'cpu_per_object_ms', 'CPU per object (ms)'),
    ('burst', 'requests_per_object', 'requests per object (no events)'),
    ('burst', 'peak_rss_mib', 'peak RSS (MiB)'),
    ('burst', 'create_latency_p50_ms', "latency, creation to the create handler's result, p50 (ms)"),
    ('burst', 'create_latency_p99_ms', "latency, creation to the create handler's result, p99 (ms)"),
    ('burst-defaults', 'cpu_per_object_ms', "each side's default posting: CPU per object (ms)"),
    ('burst-defaults', 'peak_rss_mib', "each side's default posting: peak RSS (MiB)"),
)
# The option that gives a burst's number of objects, for its figures per object.
BURST_OBJECTS_OPTION = {'burst': 'objects', 'burst-defaults': 'objects', 'burst-large': 'large_objects'}
BY_VERB_SCENARIOS = ('lifecycle', 'restart')
SIDES = ('ours', 'upstream', 'bare')


@dataclasses.dataclass(frozen=True)
class Stats:
    median: float
    low: float
    high: float
    count: int


def stats(values: Sequence[float]) -> Stats | None:
    if not values:
        return None
    return Stats(median=statistics.median(values), low=min(values), high=max(values), count=len(values))


def ratio(ours: Stats | None, upstream: Stats | None) -> float | None:
    if ours is None or upstream is None or upstream.median == 0:
        return None
    return ours.median / upstream.median


_TOTALS = frozenset({'requests_total', 'requests_per_object'})


def collect(results: Results, scenario: str, variant: str, side: str, figure: str) -> list[float]:
    """The figure's values over the repeats that succeeded; a figure inside ``requests`` is named ``requests:KEY``."""
    values: list[float] = []
    for record in _records(results, scenario, variant, side):
        if not record.get('ok'):
            continue
        figures = record['figures']
        if figure.startswith('requests:'):
            values.append(float(figures.get('requests', {}).get(figure.partition(':')[2], 0)))
        elif figure in _TOTALS and 'requests' in figures:
            # Derived from the requests by verb, so that every rendering applies the same rule
            # (see metrics.total: no WATCHes), also to the results written before the rule.
            per_object = figure == 'requests_per_object'
            divisor = results['options'][BURST_OBJECTS_OPTION[_without_loop(results, scenario)]] if per_object else 1
            values.append(metrics.total(figures['requests'], watches=False) / divisor)
        elif figure in figures:
            values.append(float(figures[figure]))
    return values


def run_loops(results: Results) -> tuple[str, ...]:
    """The event loops of the run, the first one for every scenario (older results: asyncio's own only)."""
    return tuple(results['options'].get('loops') or loops.DEFAULT_LOOPS)


def _without_loop(results: Results, scenario: str) -> str:
    for loop in run_loops(results)[1:]:
        if scenario.endswith(f'-{loop}'):
            return scenario.removesuffix(f'-{loop}')
    return scenario


def rerun_rows(results: Results) -> list[tuple[str, str, str]]:
    """The rows of the bursts on the other loops, labelled with their loop."""
    return [(loops.scenario_on(scenario, loop, run_loops(results)), figure, f'{loop}: {label}')
            for loop in run_loops(results)[1:] for scenario, figure, label in RERUN_ROWS]


def failures(results: Results, scenario: str, variant: str, side: str) -> int:
    return sum(not record.get('ok') for record in _records(results, scenario, variant, side))


def _records(results: Results, scenario: str, variant: str, side: str) -> Iterable[Mapping[str, Any]]:
    return (record for record in results.get('runs', [])
            if (record['scenario'], record['variant'], record['side']) == (scenario, variant, side))


def figure_stats(results: Results, scenario: str, variant: str, side: str, figure: str) -> Stats | None:
    return stats(collect(results, scenario, variant, side, figure))


# --- The targets ---

@dataclasses.dataclass(frozen=True)
class Target:
    key: str  # e.g. "burst-cpu", stable for tools
    description: str
    variant: str
    ours: float | None
    upstream: float | None
    bound: float | None
    met: bool | None  # None: not measured (a side failed or was not run)


def evaluate_targets(results: Results) -> list[Target]:
    targets: list[Target] = []
    for variant in results['options']['variants']:
        targets += _targets_of_variant(results, variant)
    return targets


# The scenarios whose peak RSS must be at most half of upstream's (bursts included); the bursts on every loop.
RSS_SCENARIOS = ('burst', 'burst-defaults', 'burst-large', 'restart', 'scale')
LOOPED_RSS_SCENARIOS = ('burst', 'burst-defaults')


def _targets_of_variant(results: Results, variant: str) -> list[Target]:
    targets: list[Target] = []
    run_on = run_loops(results)

    def median(scenario: str, side: str, figure: str) -> float | None:
        found = figure_stats(results, scenario, variant, side, figure)
        return None if found is None else found.median

    def at_most(key: str, scenario: str, figure: str, share: float, text: str) -> None:
        ours, upstream = median(scenario, 'ours', figure), median(scenario, 'upstream', figure)
        met = None if ours is None or upstream is None else ours <= upstream * share
        targets.append(Target(key, text, variant, ours, upstream, median(scenario, 'bare', figure), met))

    for loop in run_on:
        for base, what in (('burst', 'burst'), ('burst-defaults', "burst, each side's default posting")):
            scenario = loops.scenario_on(base, loop, run_on)
            at_most(f'{scenario}-cpu', scenario, 'cpu_per_object_ms', 1 / 3,
                    f'{what}, {loop}: CPU per object ≤ 1/3 of upstream')
    for scenario in ('burst', 'burst-large'):
        for share, key, text in ((1, '', 'no worse than upstream'), (1 / 2, '-half', '≤ 1/2 of upstream')):
            at_most(f'{scenario}-latency{key}', scenario, 'create_latency_p99_ms', share,
                    f"{scenario}: latency p99, creation to the create handler's result, {text}")
    at_most('restart-first-handling', 'restart', 'initial_wall_s', 1 / 2,
            'restart: first handling of all objects, wall time ≤ 1/2 of upstream')
    rss_scenarios = [*RSS_SCENARIOS, *(loops.scenario_on(base, loop, run_on)
                                       for loop in run_on[1:] for base in LOOPED_RSS_SCENARIOS)]
    for scenario in rss_scenarios:
        at_most(f'{scenario}-rss', scenario, 'peak_rss_mib', 1 / 2, f'{scenario}: peak RSS ≤ 1/2 of upstream')
    at_most('lifecycle-requests', 'lifecycle', 'requests_total', 1,
            'lifecycle: requests per object ≤ upstream (the same posting)')
    burst_wall, bound_wall = median('burst', 'ours', 'wall_s'), median('burst', 'bare', 'wall_s')
    targets.append(Target(
        'burst-wall', 'burst: wall time ≤ 1.25 times the bound', variant, burst_wall,
        median('burst', 'upstream', 'wall_s'), bound_wall,
        None if burst_wall is None or bound_wall is None else burst_wall <= bound_wall * 1.25))
    idle_cpu, idle_requests = median('idle', 'ours', 'cpu_percent'), median('idle', 'ours', 'requests_total')
    targets.append(Target(
        'idle', 'idle: no requests and CPU < 1% of one core', variant, idle_cpu,
        median('idle', 'upstream', 'cpu_percent'), None,
        None if idle_cpu is None or idle_requests is None else idle_cpu < 1.0 and idle_requests == 0))
    targets.extend(Target(key, text, variant, ours, upstream, bound, met)
                   for key, text, ours, upstream, bound, met in capacity.verdicts(results, variant))
    return targets


# --- Markdown ---

def render_markdown(results: Results) -> str:
    options, machine, versions = results['options'], results['machine'], results['versions']
    lines = [
        *_title(results),
        f"Machine: {machine['cpus_logical']} CPUs ({machine['cpu_model']}), {machine['memory_gib']} GiB; "
        f"{machine['platform']}; Python {machine['python']}.",
        f"Versions: {'; '.join(f'{key}: {value}' for key, value in versions.items() if value)}.",
        f"Sizes: {_sizes(options)}, {options['repeats']} repeat(s); "
        f"log messages posted as k8s-events: {_posted_logs(options)}; "
        f"started {results['started']}, took {results['duration_s'] / 60:.1f} min"
        f"{' (INTERRUPTED: partial results)' if results.get('interrupted') else ''}.",
        *_load_average(results),
        '',
        'Cells: median (min..max) over the repeats. "bound": no framework, the fewest requests '
        'for the same visible results.',
    ]
    table: list[str] = []
    for variant in options['variants']:
        for scenario, figure, label in [*ROWS, *rerun_rows(results), *_by_verb_rows(results, variant)]:
            cells = {side: figure_stats(results, scenario, variant, side, figure) for side in SIDES}
            if all(cell is None for cell in cells.values()) and not _any_failed(results, scenario, variant):
                continue
            row = [scenario, variant, label]
            row += [_cell(cells[side], failures(results, scenario, variant, side)) for side in ('ours', 'upstream')]
            found = ratio(cells['ours'], cells['upstream'])
            row.append('' if found is None else f'{found:.2f}')
            row.append(_cell(cells['bare'], failures(results, scenario, variant, 'bare')))
            table.append('| ' + ' | '.join(row) + ' |')
    if table or options.get('scenario') != 'rates':  # the rate sweep alone has only a table of its own
        lines += ['', '| scenario | variant | figure | ours | upstream | ours/upstream | bound |',
                  '|---|---|---|---:|---:|---:|---:|', *table]

    lines += render_rates(results) + render_peer(results)
    lines += ['', '## Targets', '',
              '| target | variant | ours | upstream | bound | met |',
              '|---|---|---:|---:|---:|---|']
    for target in evaluate_targets(results):
        if options.get('scenario') == 'rates' and not target.key.startswith('rates-'):
            continue  # the other scenarios did not run
        met = {True: 'yes', False: '**no**', None: 'not measured'}[target.met]
        lines.append(f'| {target.description} | {target.variant} | {_number(target.ours)} | '
                     f'{_number(target.upstream)} | {_number(target.bound)} | {met} |')

    lines += _metrics_cost_rows(results)
    if results.get('baseline'):
        lines += ['', '## Attribution check (no operator)', '']
    for variant, figures in results.get('baseline', {}).items():
        lines.append(f"- {variant}: {figures['harness_requests']} requests by the harness itself; "
                     f"left after subtracting them: {figures['residue'] or 'nothing'}.")

    failed = [record for record in results.get('runs', []) if not record.get('ok')]
    unavailable = results.get('unavailable', {})
    if failed or unavailable:
        lines += ['', '## Failures', '']
        for side, error in unavailable.items():
            lines.append(f'- {side}: unavailable: {error.splitlines()[0]}')
        for record in failed:
            lines.append(f"- {record['scenario']}, {record['variant']}, {record['side']}, "
                         f"repeat {record['repeat'] + 1}: {record['error'].splitlines()[0]}")
    return '\n'.join(lines) + '\n'


def _title(results: Results) -> list[str]:
    """The title, and the run's note if it has one (``run --note``: what the figures are worth, and why)."""
    note = results.get('note')
    return ['# Benchmarks: ours vs upstream Kopf', '', *([note, ''] if note else [])]


def _sizes(options: Mapping[str, Any]) -> str:
    rates = ', '.join(f'{rate:g}' for rate in options.get('rates') or ())
    sweep = f"rate sweep at {rates} objects/s, {options['rate_seconds']:g} s each" if rates else ''
    if options.get('scenario') == 'rates':
        return f'the {sweep}, alone'
    sizes = (f"burst {options['objects']} objects, restart/idle {options['restart_objects']} objects, "
             f"burst-large {options.get('large_objects') or '—'}, scale {options.get('scale_objects') or '—'} objects, "
             f"idle {options['idle_seconds']:g} s")
    return f'{sizes}, {sweep}' if sweep else sizes


def _load_average(results: Results) -> list[str]:
    """How much the machine was shared: its load, and where the operator and the control plane ran."""
    load = results.get('load_average')
    if not load:
        return [pinning.describe(results)]
    def text(values: Sequence[float]) -> str:
        return ', '.join(f'{value:.1f}' for value in values)
    return [f"Load average (1, 5, 15 min) on {results['machine']['cpus_logical']} CPUs: "
            f"{text(load['start'])} at the start, {text(load['end'])} at the end.", pinning.describe(results)]


def _metrics_cost_rows(results: Results) -> list[str]:
    """The side ``ours-metrics`` (``--metrics``, scraped every second) beside ``ours``: the burst's CPU."""
    lines: list[str] = []
    for variant in results['options']['variants']:
        for scenario in ('burst', 'burst-defaults', 'burst-large'):
            for figure in ('cpu_per_object_ms', 'create_latency_p99_ms'):
                off = figure_stats(results, scenario, variant, 'ours', figure)
                on = figure_stats(results, scenario, variant, 'ours-metrics', figure)
                if off is None or on is None:
                    continue
                found = ratio(on, off)
                cost = '' if found is None else f'{(found - 1) * 100:+.1f} %'
                lines.append(f'| {scenario} | {variant} | {figure} | {_cell(off, 0)} | {_cell(on, 0)} | {cost} |')
    if not lines:
        return []
    return ['', '## The cost of the metrics (ours with --metrics, scraped every second, vs without)', '',
            '| scenario | variant | figure | without | with | cost |', '|---|---|---|---:|---:|---:|', *lines]


def _by_verb_rows(results: Results, variant: str) -> list[tuple[str, str, str]]:
    rows = []
    for scenario in BY_VERB_SCENARIOS:
        keys: set[str] = set()
        for record in results.get('runs', []):
            if record.get('ok') and (record['scenario'], record['variant']) == (scenario, variant):
                keys.update(record['figures'].get('requests', {}))
        # The WATCHes that end within a phase are the control plane's own (see metrics.total): not shown.
        rows += [(scenario, f'requests:{key}', f'requests: {key}') for key in sorted(keys)
                 if not key.startswith('WATCH ')]
    return rows


def _any_failed(results: Results, scenario: str, variant: str) -> bool:
    return any(failures(results, scenario, variant, side) for side in SIDES)


def _cell(found: Stats | None, failed: int) -> str:
    text = '' if found is None else _number(found.median)
    if found is not None and found.count > 1 and found.low != found.high:
        text += f' ({_number(found.low)}..{_number(found.high)})'
    if failed:
        text += f' (failed {failed}x)'
    return text.strip()


def _number(value: float | None) -> str:
    if value is None:
        return '—'
    if value == int(value) and abs(value) >= 10:
        return f'{int(value)}'
    if abs(value) >= 100:
        return f'{value:.0f}'
    if abs(value) >= 10:
        return f'{value:.1f}'
    return f'{value:.2f}' if abs(value) >= 0.1 or value == 0 else f'{value:.3f}'


def _posted_logs(options: Mapping[str, Any]) -> str:
    settings = options.get('settings', {})
    if 'posting_loggers' in settings:  # the results of the runs since both sides default to no posting
        if settings['posting_loggers']:
            return 'yes (settings.posting.loggers = True on both sides)'
        return 'no (settings.posting.loggers = False on both sides)'
    # Older results: `posted_logs` was on by default, when ours posted the log messages by default.
    if settings.get('posted_logs', True):
        return "each side's default at the time (ours: yes, upstream: no)"
    return 'no (settings.posting.loggers = False on both sides)'
