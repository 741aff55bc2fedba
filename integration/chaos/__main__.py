"""
``python -m integration.chaos``: one soak on a local control plane started for it.

It prints the fault schedule's size, then one line with the figures, and
exits with 1 if an invariant is broken. ``--results`` saves the figures as
JSON; ``--print-schedule`` prints the schedule of the seed and exits.
"""
import argparse
import json
import pathlib
import sys
import tempfile

from integration.controlplane import ControlPlane

from . import _schedule
from ._harness import SoakConfig, run_soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m integration.chaos', description=__doc__.split('\n\n')[0])
    parser.add_argument('--minutes', type=float, default=2.0, help='how long the faults strike (default: 2)')
    parser.add_argument('--objects', type=int, default=30, help='how many objects live and die (default: 30)')
    parser.add_argument('--updates', type=int, default=3, help='updates of each object (default: 3)')
    parser.add_argument('--replicas', type=int, default=1,
                        help='sharded replicas (kopf run --shards=auto) if more than 1 (default: 1)')
    parser.add_argument('--seed', type=int, default=1, help='the seed of the fault schedule and the workload')
    parser.add_argument('--faults', default='all',
                        help="'all', 'none', or kind=per-minute,... over the defaults; kinds: "
                             + ', '.join(_schedule.KINDS))
    parser.add_argument('--workdir', type=pathlib.Path, default=None,
                        help='where the journals, the kubeconfig and the logs go (default: a new temporary one)')
    parser.add_argument('--results', type=pathlib.Path, default=None, help='save the figures there as JSON')
    parser.add_argument('--print-schedule', action='store_true', help='print the fault schedule and exit')
    args = parser.parse_args(argv)
    try:
        rates = _schedule.parse_rates(args.faults)
    except ValueError as exc:
        parser.error(str(exc))
    if args.minutes <= 0 or args.objects <= 0 or args.updates < 0 or args.replicas <= 0:
        parser.error('--minutes, --objects and --replicas must be positive, --updates not negative.')
    if args.print_schedule:
        for fault in _schedule.make_schedule(args.seed, args.minutes * 60, rates):
            print(json.dumps(fault.__dict__))
        return 0
    workdir = args.workdir or pathlib.Path(tempfile.mkdtemp(prefix='kopf-chaos-'))
    config = SoakConfig(minutes=args.minutes, objects=args.objects, updates=args.updates, seed=args.seed,
                        rates=rates, workdir=workdir, replicas=args.replicas)
    print(f'The journals and logs go to {workdir}.', flush=True)
    with ControlPlane(workdir / 'controlplane') as control_plane:
        result = run_soak(config, control_plane)
    print(result.report.line())
    for problem in result.report.problems():
        print(f'  {problem}')
    if args.results is not None:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(result.as_json(), indent=2) + '\n')
    return 0 if result.report.ok else 1


if __name__ == '__main__':
    sys.exit(main())
