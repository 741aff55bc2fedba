"""
The whole run: the cluster, the sides, the repeats, and one record per scenario, side and repeat.

The sides take turns within every repeat, and the order of the turns rotates
from one repeat to the next, so that a drift of the machine (other load, the
API server's growing storage) hits all sides alike. A side that fails a
scenario gets a failure record with its log's tail; the run goes on.
"""
import asyncio
import dataclasses
import datetime
import os
import pathlib
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import psutil

from benchmarks import loops as loops_
from benchmarks import pinning as pinning_
from benchmarks import sides as sides_
from benchmarks.cluster import VARIANTS, BenchCluster, Variant
from benchmarks.kubeapi import KubeApi
from benchmarks.scenarios.baseline import baseline
from benchmarks.scenarios.burst import burst
from benchmarks.scenarios.idle import idle
from benchmarks.scenarios.lifecycle import lifecycle
from benchmarks.scenarios.rates import kind_of, rate_step
from benchmarks.scenarios.restart import prepare, restart
from benchmarks.scenarios.session import Figures, Session, Settings

Record = dict[str, Any]
LOG_TAIL_LINES = 40


@dataclasses.dataclass(frozen=True)
class Options:
    objects: int = 1000
    restart_objects: int = 5000
    large_objects: int = 5000  # the second burst, for the latency at scale (0: not run)
    scale_objects: int = 20000  # the objects watched at a start, for the memory and the listing (0: not run)
    idle_seconds: float = 60.0
    repeats: int = 3
    variants: tuple[str, ...] = ('status', 'plain')
    sides: tuple[str, ...] = sides_.SIDES
    # The first loop runs every scenario; each other one runs the bursts again on both frameworks (for the CPU).
    loops: tuple[str, ...] = loops_.LOOPS
    baseline_objects: int = 100
    # The rate sweep's objects per second (empty: not run): steps of ~1.4 times, so that "0.8 times the bound"
    # can be told from "equal"; up to past the saturation of the API server itself on a 2-core machine.
    rates: tuple[float, ...] = (5.0, 7.0, 10.0, 14.0, 20.0, 28.0, 40.0)
    rate_seconds: float = 20.0  # the arrivals' duration at each rate
    scenario: str = 'all'  # or 'rates': the rate sweep alone
    # The operator and the control plane on separate CPUs (taskset), or None: all share all CPUs.
    pin: pinning_.Pinning | None = None
    settings: Settings = dataclasses.field(default_factory=Settings)
    work_dir: pathlib.Path = pathlib.Path('benchmarks/results/work')


def run(options: Options, *, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run everything; return the results document (see ``report.py`` for its rendering)."""
    started = time.time()
    load_at_start = os.getloadavg()
    available: dict[str, sides_.Side] = {}
    unavailable: dict[str, str] = {}
    for loop, name in _loops_and_sides(options):
        progress(f'Preparing the side: {name} on {loop}')
        try:
            side = sides_.make_side(name, loop)
            cpus = None if options.pin is None else options.pin.operator
            available[_side_key(name, loop, options)] = dataclasses.replace(side, cpus=cpus)
        except sides_.SideUnavailable as e:
            unavailable[_side_key(name, loop, options)] = str(e)
            progress(f'  unavailable: {e}')

    options.work_dir.mkdir(parents=True, exist_ok=True)
    progress('Starting the local control plane')
    with BenchCluster(options.work_dir / 'cluster') as cluster:
        pinned = _pin_control_plane(options, cluster, progress)
        versions = {name: side.version for name, side in available.items() if side.loop == options.loops[0]}
        versions.update(cluster.describe())
        versions['upstream_reported'] = _upstream_reported_version(available.get('upstream'))
        versions['event_loops'] = _describe_loops(options)
        baselines: dict[str, Figures] = {}
        runs: list[Record] = []
        interrupted = False
        try:
            asyncio.run(_run_all(options, cluster, list(available.values()), baselines, runs, progress))
        except KeyboardInterrupt:  # keep what is measured so far: a long run is worth a partial report
            interrupted = True
            progress('Interrupted: reporting what was measured so far.')

    return {
        'started': datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(timespec='seconds'),
        'duration_s': round(time.time() - started, 1),
        'options': _describe_options(options),
        'machine': describe_machine(),
        # The machine is shared: the load average (1, 5, 15 min) says how much the figures are worth.
        'load_average': {'start': list(load_at_start), 'end': list(os.getloadavg())},
        'pinning': pinned,
        'versions': versions,
        'unavailable': unavailable,
        'interrupted': interrupted,
        'baseline': baselines,
        'runs': runs,
    }


def _pin_control_plane(options: Options, cluster: BenchCluster,
                       progress: Callable[[str], None]) -> dict[str, Any] | None:
    """Move the control plane's processes to their CPUs; what the kernel then allows them, for the header."""
    if options.pin is None:
        return None
    allowed = pinning_.pin_processes(cluster.control_plane.pids, options.pin.control_plane)
    progress(f'Pinned: the control plane to CPU {options.pin.control_plane} ({allowed}), '
             f'the operators to CPU {options.pin.operator}')
    return {'operator': options.pin.operator, 'control_plane': options.pin.control_plane,
            'control_plane_allowed': allowed}


async def _run_all(options: Options, cluster: BenchCluster, sides: list[sides_.Side],
                   baselines: dict[str, Figures], runs: list[Record], progress: Callable[[str], None]) -> None:
    """Fill the baselines and the runs' records as they are measured (so that an interruption keeps them)."""
    async with cluster.api() as api:
        for variant_name in options.variants if options.scenario != 'rates' else ():
            progress(f'Baseline (no operator), {variant_name}: {options.baseline_objects} objects')
            baselines[variant_name] = await baseline(api, VARIANTS[variant_name], f'baseline-{variant_name}',
                                                     options.baseline_objects, options.settings)
        for repeat in range(options.repeats):
            for kind, loop in _kinds(options):
                on_loop = [side for side in sides if side.loop == loop]
                turns = on_loop[repeat % len(on_loop):] + on_loop[:repeat % len(on_loop)] if on_loop else []
                for variant_name in options.variants:
                    for side in turns:
                        if kind == 'defaults' and not side.is_framework:
                            continue  # the bound has no defaults to compare
                        variant = VARIANTS[variant_name]
                        progress(f'[repeat {repeat + 1}/{options.repeats}] {kind}, {variant.name}, {side.name}'
                                 f' on {side.loop}')
                        started = time.monotonic()
                        records = await _run_session(kind, options, cluster, api, side, variant, repeat)
                        for record in records:
                            status = 'ok' if record['ok'] else f"FAILED: {record['error'].splitlines()[0]}"
                            progress(f'    {record["scenario"]}: {status}')
                        progress(f'    ({time.monotonic() - started:.0f}s)')
                        runs.extend(records)


async def _run_session(kind: str, options: Options, cluster: BenchCluster, api: KubeApi,
                       side: sides_.Side, variant: Variant, repeat: int) -> list[Record]:
    """One operator session in a fresh namespace: its scenarios in order, until one fails."""
    namespace = f'{kind}-{variant.name}-{side.name}-{side.loop}-{repeat}'
    settings = dataclasses.replace(options.settings, posting_loggers=None) if kind == 'defaults' else options.settings
    session = Session(cluster, api, side=side, variant=variant, namespace=namespace,
                      logs_dir=options.work_dir / 'logs', settings=settings)
    steps: list[tuple[str, Callable[[], Awaitable[Figures]]]]
    rates = {kind_of(rate): rate for rate in options.rates}
    extra: Record = {'rate': rates[kind]} if kind in rates else {}  # a step of the rate sweep: its rate
    if kind in rates:
        steps = [('rates', lambda: _started_then(session, rate_step(session, rates[kind], options.rate_seconds)))]
    elif kind == 'churn' and side.loop != options.loops[0]:  # only the burst again, on the other loop
        steps = [('burst', lambda: _started_then(session, burst(session, options.objects)))]
    elif kind == 'churn':
        steps = [('lifecycle', lambda: _started_then(session, lifecycle(session))),
                 ('burst', lambda: burst(session, options.objects))]
    elif kind == 'restart':
        steps = [('restart', lambda: _prepared_then(session, options.restart_objects)),
                 ('idle', lambda: idle(session, options.idle_seconds))]
    elif kind == 'large':
        steps = [('burst-large', lambda: _started_then(session, burst(session, options.large_objects)))]
    elif kind == 'scale':
        steps = [('scale', lambda: _prepared_then(session, options.scale_objects))]
    else:  # the same burst again, with each framework's own default of posting its log messages
        steps = [('burst-defaults', lambda: _started_then(session, burst(session, options.objects)))]
    records: list[Record] = []
    failure: str | None = None
    try:
        async with session:
            for scenario, step in steps:
                record: Record = {'scenario': loops_.scenario_on(scenario, side.loop, options.loops),
                                  'variant': variant.name, 'side': side.name, 'loop': side.loop,
                                  'repeat': repeat, 'namespace': namespace, 'log': str(session.log_path), **extra}
                records.append(record)
                if failure is not None:
                    record.update(ok=False, error=f'Not run: {failure}')
                    continue
                try:
                    figures = await step()
                    sides_.check_loop(side, session.log_path)
                    record.update(ok=True, figures=figures)
                except Exception as e:
                    failure = f'{scenario} failed'
                    record.update(ok=False, error=_describe_error(e), log_tail=_log_tail(session))
    except Exception as e:  # the session's own cleanup failed: the figures stand, the failure is noted
        if records:
            records[-1].setdefault('cleanup_error', _describe_error(e))
        else:
            records.append({'scenario': loops_.scenario_on(steps[0][0], side.loop, options.loops),
                            'variant': variant.name, 'side': side.name, 'loop': side.loop, 'repeat': repeat,
                            'ok': False, 'error': _describe_error(e), **extra})
    return records


def _kinds(options: Options) -> list[tuple[str, str]]:
    """
    The sessions of one repeat with their loops, in order: the bigger sizes last, and only when asked for;
    then the bursts on the other loops; the rate sweep last.
    """
    primary = options.loops[0]
    rate_kinds = [(kind_of(rate), primary) for rate in sorted(options.rates)]  # a session per rate: no backlog
    if options.scenario == 'rates':
        return rate_kinds
    kinds = ['churn', 'restart', 'defaults']
    if options.large_objects:
        kinds.append('large')
    if options.scale_objects:
        kinds.append('scale')
    reruns = [(kind, loop) for loop in options.loops[1:] for kind in loops_.RERUN_KINDS]
    return [(kind, primary) for kind in kinds] + reruns + rate_kinds


def _loops_and_sides(options: Options) -> list[tuple[str, str]]:
    """The sides to prepare: all on the first loop; the frameworks (not the metrics' side) on the others."""
    others = [(loop, name) for loop in options.loops[1:] for name in options.sides if name in ('ours', 'upstream')]
    return [(options.loops[0], name) for name in options.sides] + others


def _side_key(name: str, loop: str, options: Options) -> str:
    return name if loop == options.loops[0] else f'{name} on {loop}'


def _describe_loops(options: Options) -> str:
    primary, others = options.loops[0], options.loops[1:]
    text = f'every scenario {loops_.describe(primary)}'
    return text + ''.join(f'; the bursts again {loops_.describe(loop)}' for loop in others)


async def _started_then(session: Session, scenario: Awaitable[Figures]) -> Figures:
    """Start the operator on the empty namespace and wait until it is idle; then run the scenario."""
    operator = await session.start_operator()
    startup_done = await session.idle(timeout=session.settings.timeout, require_requests=True)
    figures = await scenario
    figures['startup_s'] = startup_done - operator.started_at
    return figures


async def _prepared_then(session: Session, objects: int) -> Figures:
    initial = await prepare(session, objects)
    figures = await restart(session, objects)
    figures.update(initial)
    return figures


def _describe_error(error: BaseException) -> str:
    if isinstance(error, (sides_.OperatorDied, sides_.WrongLoop, asyncio.TimeoutError)):
        return f'{type(error).__name__}: {error}'
    return ''.join(traceback.format_exception_only(type(error), error)).strip()


def _log_tail(session: Session) -> str:
    try:
        lines = session.log_path.read_text(errors='replace').splitlines()
    except FileNotFoundError:
        return ''
    return '\n'.join(lines[-LOG_TAIL_LINES:])


def _upstream_reported_version(side: sides_.Side | None) -> str:
    if side is None:
        return ''
    result = subprocess.run([side.argv[0], '--version'], capture_output=True, text=True, check=False)
    return result.stdout.strip()


def _describe_options(options: Options) -> dict[str, Any]:
    described = dataclasses.asdict(options)
    described['work_dir'] = str(options.work_dir)
    return described


def describe_machine() -> dict[str, Any]:
    model = ''
    try:
        for line in pathlib.Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                model = line.partition(':')[2].strip()
                break
    except OSError:
        pass
    return {
        'cpus_logical': os.cpu_count(),
        'cpus_physical': psutil.cpu_count(logical=False),
        'cpu_model': model,
        'memory_gib': round(psutil.virtual_memory().total / 2**30, 1),
        'platform': platform.platform(),
        'python': sys.version.split()[0],
    }
