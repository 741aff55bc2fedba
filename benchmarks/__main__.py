"""
The benchmarks' command line; run it from the repository root in the ``bench`` environment::

    hatch run bench:run --objects 1000 --large-objects 5000 --restart-objects 5000 --scale-objects 20000 \
        --idle-seconds 60 --repeats 3
    hatch run bench:python -m benchmarks smoke        # tiny sizes: checks that everything still runs
    hatch run bench:python -m benchmarks run --scenario rates --rates 5,10,20,40,80 --duration 30   # the sweep alone
    hatch run bench:python -m benchmarks report benchmarks/results/NAME.json   # re-render the table
    hatch run bench:python -m benchmarks plot benchmarks/results/NAME.json     # redraw the pictures
"""
import argparse
import datetime
import json
import pathlib
import sys
from collections.abc import Collection
from typing import Any

from benchmarks import arrivals, loops, pinning, plots, report, runner, sides
from benchmarks.cluster import VARIANTS
from benchmarks.scenarios.rates import drain_seconds
from benchmarks.scenarios.session import Settings

RESULTS_DIR = pathlib.Path('benchmarks/results')

# Small enough to finish in a minute or two, big enough to go through every code path.
SMOKE = dict(objects=5, restart_objects=5, large_objects=8, scale_objects=8, idle_seconds=2.0, repeats=1,
             variants='status', baseline_objects=5, quiet=1.5, poll=0.5, rates='', duration=2.0,
             loops=','.join(loops.LOOPS))
SCENARIOS = ('all', 'rates')


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in ('report', 'plot'):
        results = json.loads(pathlib.Path(args.results).read_text())
        out = pathlib.Path(args.results).with_suffix('')
        if args.command == 'plot':
            print(f'Drawn: {plots.describe(plots.draw(results, out))}')
        markdown = _write_markdown(results, out)
        if args.command == 'report':
            print(markdown)
        return 0
    out = pathlib.Path(args.out) if args.out else RESULTS_DIR / f'{args.command}-{_timestamp()}'
    out = out.with_suffix('') if out.suffix == '.json' else out
    rates = _rates(args.rates, args.duration)
    if args.scenario == 'rates' and not rates:
        raise SystemExit('--scenario rates runs the rate sweep alone: give its rates, e.g. --rates 5,10,20,40,80.')
    options = runner.Options(
        objects=args.objects,
        restart_objects=args.restart_objects,
        large_objects=args.large_objects,
        scale_objects=args.scale_objects,
        idle_seconds=args.idle_seconds,
        repeats=args.repeats,
        variants=_choices(args.variants, VARIANTS),
        sides=_choices(args.sides, sides.ALL_SIDES),
        loops=tuple(dict.fromkeys(_choices(args.loops, loops.LOOPS))) or loops.DEFAULT_LOOPS,
        baseline_objects=args.baseline_objects,
        rates=rates,
        rate_seconds=args.duration,
        scenario=args.scenario,
        pin=_pinning(args.pin),
        settings=Settings(quiet=args.quiet, poll=args.poll, concurrency=args.concurrency,
                          posting_loggers=args.posted_logs),
        work_dir=pathlib.Path(args.work_dir) if args.work_dir else out.parent / f'{out.name}.work',
    )
    print(f'Estimated duration: about {estimate_minutes(options):.0f} min (on 2 cores).', flush=True)
    results = runner.run(options, progress=lambda message: print(message, flush=True))
    if args.note:
        results['note'] = args.note
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix('.json').write_text(json.dumps(results, indent=2) + '\n')
    drawn = plots.draw(results, out)
    print(_write_markdown(results, out))
    print(f'Written: {out.with_suffix(".json")}, {out.with_suffix(".md")}, {plots.describe(drawn)}')
    return 0


def _write_markdown(results: dict[str, Any], out: pathlib.Path) -> str:
    """The report's Markdown beside the JSON, with the pictures drawn for it."""
    pictures = plots.links(results, out)
    markdown = report.render_markdown(results) + ('\n'.join(pictures) + '\n' if pictures else '')
    out.with_suffix('.md').write_text(markdown)
    return markdown


def estimate_minutes(options: runner.Options) -> float:
    """A rough guess from measured rates on a 2-core machine, so that nobody starts a 3-hour run unawares."""
    frameworks = sum(side not in ('bare', 'go') for side in options.sides)
    # Each rate: a session per side (~20 s to start, wait, clean up), the arrivals, at most the drain.
    sweep = len(options.sides) * sum(20 + options.rate_seconds + drain_seconds(options.rate_seconds) / 2
                                     for _ in options.rates)
    if options.scenario == 'rates':
        return sweep * len(options.variants) * options.repeats / 60 + 0.5
    bursts = options.objects + options.large_objects
    starts = options.restart_objects + options.scale_objects
    per_variant = (
        # the second term: the burst again with each framework's default posting, in a session of its own
        frameworks * (bursts * 0.05 + starts * 0.04 + options.idle_seconds + 60)
        + frameworks * (options.objects * 0.05 + 20)
        + (len(options.sides) - frameworks) * (bursts * 0.02 + starts * 0.02 + options.idle_seconds + 30)
    )
    # The bursts again on each other event loop: the churn's burst and the default posting's, per framework.
    reruns = (len(options.loops) - 1) * frameworks * (options.objects * 0.1 + 40)
    return (per_variant + reruns + sweep) * len(options.variants) * options.repeats / 60 + 0.5


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='python -m benchmarks', description='Ours vs upstream Kopf, side by side.')
    commands = parser.add_subparsers(dest='command', required=True)
    for name, defaults, text in (('run', {}, 'the full benchmarks (defaults: the sizes of the targets)'),
                                 ('smoke', SMOKE, 'tiny sizes, one repeat: that everything still runs')):
        command = commands.add_parser(name, help=text)
        command.set_defaults(**defaults)
        default = runner.Options()
        command.add_argument('--objects', type=int, default=default.objects, help='objects in the burst')
        command.add_argument('--restart-objects', type=int, default=default.restart_objects,
                             help='objects handled before the restart (and watched while idle)')
        command.add_argument('--large-objects', type=int, default=default.large_objects,
                             help='objects in the second, larger burst (burst-large; 0: not run)')
        command.add_argument('--scale-objects', type=int, default=default.scale_objects,
                             help='objects handled before the start of the scale scenario (0: not run)')
        command.add_argument('--idle-seconds', type=float, default=default.idle_seconds)
        command.add_argument('--repeats', type=int, default=default.repeats)
        command.add_argument('--variants', default=','.join(default.variants),
                             help=f'comma-separated CRD variants: {",".join(VARIANTS)}')
        command.add_argument('--sides', default=','.join(default.sides),
                             help=f'comma-separated sides: {",".join(sides.ALL_SIDES)}')
        command.add_argument('--loops', default=','.join(default.loops),
                             help='comma-separated event loops of both frameworks: the first for every scenario, '
                                  f'the others for the bursts again; of: {",".join(loops.LOOPS)}')
        command.add_argument('--baseline-objects', type=int, default=default.baseline_objects,
                             help='objects of the no-operator attribution check')
        command.add_argument('--quiet', type=float, default=default.settings.quiet,
                             help='seconds without requests that make an operator idle')
        command.add_argument('--poll', type=float, default=default.settings.poll,
                             help='seconds between readings of /metrics while waiting for idleness')
        command.add_argument('--concurrency', type=int, default=default.settings.concurrency,
                             help="the harness's requests in flight when creating/updating/deleting in bulk")
        command.add_argument('--posted-logs', dest='posted_logs', action='store_true', default=False,
                             help='both frameworks post log messages as k8s-events (settings.posting.loggers);'
                                  ' by default, neither does')
        command.add_argument('--rates', default=','.join(f'{rate:g}' for rate in default.rates),
                             help='comma-separated objects per second of the rate sweep (empty: not run)')
        command.add_argument('--duration', type=float, default=default.rate_seconds,
                             help='seconds of arrivals at each rate of the sweep')
        command.add_argument('--scenario', choices=SCENARIOS, default='all',
                             help='all: every scenario, the rate sweep last; rates: the rate sweep alone')
        _add_placement_arguments(command)
        command.set_defaults(**defaults)  # again: the arguments' own defaults must not override the smoke sizes
    rerender = commands.add_parser('report', help='render the Markdown table of a results JSON file again')
    rerender.add_argument('results')
    redraw = commands.add_parser('plot', help='draw the pictures of a results JSON file again (and link them)')
    redraw.add_argument('results')
    return parser


def _add_placement_arguments(command: argparse.ArgumentParser) -> None:
    """Where the processes run, where their results and logs go, and what the results say of themselves."""
    command.add_argument('--pin', nargs='?', const=pinning.DEFAULT, metavar='OPERATOR:CONTROL_PLANE',
                         help='run the operator under test and the control plane on separate CPUs (taskset): '
                              f'CPU lists, {pinning.DEFAULT} if given alone; by default, unpinned')
    command.add_argument('--out', help='the results path without a suffix (.json, .md and the .png pictures)')
    command.add_argument('--work-dir', help="the cluster's state and the operators' logs (default: next to --out)")
    command.add_argument('--note', help="a paragraph at the top of the results: what the figures are worth, and why")


def _pinning(text: str | None) -> pinning.Pinning | None:
    if text is None:
        return None
    try:
        pinning.taskset()
        return pinning.parse(text)
    except pinning.PinningError as e:
        raise SystemExit(str(e)) from None


def _choices(text: str, allowed: Collection[str]) -> tuple[str, ...]:
    chosen = tuple(item.strip() for item in text.split(',') if item.strip())
    unknown = [item for item in chosen if item not in allowed]
    if unknown:
        raise SystemExit(f'Unknown: {", ".join(unknown)}; choose from: {", ".join(allowed)}')
    return chosen


def _rates(text: str, duration: float) -> tuple[float, ...]:
    """The sweep's rates, ascending; each one checked with the duration (at least one object per rate)."""
    rates: set[float] = set()
    for item in (item.strip() for item in text.split(',') if item.strip()):
        try:
            rate = float(item)
        except ValueError:
            raise SystemExit(f'--rates: {item!r} is not a number; give objects per second, e.g. --rates 5,10,20') \
                from None
        try:
            arrivals.Schedule(rate, duration)
        except arrivals.ScheduleError as e:
            raise SystemExit(f'--rates {item} with --duration {duration:g}: {e}') from None
        rates.add(rate)
    return tuple(sorted(rates))


def _timestamp() -> str:
    return datetime.datetime.now().strftime('%Y%m%d-%H%M%S')


if __name__ == '__main__':
    sys.exit(main())
