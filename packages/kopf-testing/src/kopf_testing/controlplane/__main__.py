"""
The shell interface to the local Kubernetes control plane: build, start, inspect, stop.

Run with the package installed::

    python -m kopf_testing.controlplane build
    eval "$(python -m kopf_testing.controlplane start --state-dir /tmp/cp)"
    eval "$(python -m kopf_testing.controlplane start --feature-gates ShardedListAndWatch=true --state-dir /tmp/cp)"
    python -m kopf_testing.controlplane status --state-dir /tmp/cp
    python -m kopf_testing.controlplane env --state-dir /tmp/cp
    python -m kopf_testing.controlplane kubeconfig --service-account default/operator --state-dir /tmp/cp
    python -m kopf_testing.controlplane stop --state-dir /tmp/cp

``start`` returns once the API is ready and leaves the servers running in the
background; their PIDs, ports and credentials are in ``STATE_DIR/state.json``,
their logs in ``STATE_DIR/logs/``. Only the ``export`` lines go to stdout (so
that ``eval`` works); progress and errors go to stderr.
"""
import argparse
import os
import pathlib
import shlex
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from types import FrameType

from ._builder import BuildError
from ._cluster import ControlPlane, ControlPlaneError
from ._gates import FeatureGatesError, format_feature_gates, parse_feature_gates
from ._lookup import locate_binaries
from ._targets import Cluster, KubectlError

DEFAULT_STATE_DIR = pathlib.Path(tempfile.gettempdir()) / f'kopf-controlplane-{os.getuid()}'


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        code: int = args.command(args)
    except (BuildError, ControlPlaneError, FeatureGatesError, KubectlError) as e:
        print(f'Error: {e}', file=sys.stderr)
        return 1
    return code


def _build(args: argparse.Namespace) -> int:
    started = time.monotonic()
    bin_dir = locate_binaries()
    print(f'Binaries are in {bin_dir} ({time.monotonic() - started:.1f}s).', file=sys.stderr)
    print(bin_dir)
    return 0


def _start(args: argparse.Namespace) -> int:
    # A termination or hang-up during the start must clean up like Ctrl-C does: via an exception.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    signal.signal(signal.SIGHUP, _exit_on_signal)
    control_plane = ControlPlane(args.state_dir, start_timeout=args.timeout,
                                 feature_gates=parse_feature_gates(args.feature_gates))
    print(f'Building (if needed) and starting the control plane in {args.state_dir} ...', file=sys.stderr)
    started = time.monotonic()
    control_plane.start()
    control_plane.detach()
    print(f'Ready at {control_plane.server} in {time.monotonic() - started:.1f}s.', file=sys.stderr)
    _print_exports(control_plane)
    return 0


def _stop(args: argparse.Namespace) -> int:
    control_plane = ControlPlane.load(args.state_dir)
    started = time.monotonic()
    control_plane.stop()
    print(f'Stopped in {time.monotonic() - started:.1f}s.', file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    control_plane = ControlPlane.load(args.state_dir)
    ready = control_plane.is_running() and control_plane.is_ready()
    print(f'server:     {control_plane.server}')
    print(f'ready:      {"yes" if ready else "no"}')
    print(f'kubeconfig: {control_plane.kubeconfig}')
    print(f'restricted: {control_plane.user_kubeconfig} (a user without permissions, for RBAC tests)')
    print(f'kubectl:    {control_plane.kubectl_path}')
    gates = format_feature_gates(control_plane.feature_gates) or 'the release defaults'
    print(f'gates:      {gates}')
    print(f'logs:       {control_plane.logs_dir}')
    for name, pid in control_plane.pids.items():
        print(f'{name + ":":25}pid {pid}')
    return 0 if ready else 1


def _kubeconfig(args: argparse.Namespace) -> int:
    namespace, _, name = args.service_account.partition('/')
    if not namespace or not name:
        print(f'Error: --service-account must be NAMESPACE/NAME, not {args.service_account!r}.', file=sys.stderr)
        return 2
    control_plane = ControlPlane.load(args.state_dir)
    cluster = Cluster('local', control_plane.kubeconfig, control_plane.server, control_plane.kubectl_path,
                      control_plane)
    print(cluster.service_account_kubeconfig(namespace, name, duration=args.duration))
    return 0


def _env(args: argparse.Namespace) -> int:
    _print_exports(ControlPlane.load(args.state_dir))
    return 0


def _print_exports(control_plane: ControlPlane) -> None:
    print(f'export KUBECONFIG={shlex.quote(str(control_plane.kubeconfig))}')


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog='python -m kopf_testing.controlplane', description=__doc__.split('\n\n')[0])
    commands = parser.add_subparsers(required=True, metavar='COMMAND')
    build = commands.add_parser(
        'build', help='find the binaries ($KOPF_CONTROLPLANE_BINARIES, the cache, PATH) or build them; '
                      'print their directory')
    build.set_defaults(command=_build)
    for name, function, text in [
        ('start', _start, 'start in the background and print the exports'),
        ('stop', _stop, 'stop the servers and remove all files but the logs'),
        ('status', _status, 'show where it runs and whether it is ready (exit code 1 if not)'),
        ('env', _env, 'print the exports for a shell'),
        ('kubeconfig', _kubeconfig, "write a service account's kubeconfig (only its RBAC permissions); print its path"),
    ]:
        command = commands.add_parser(name, help=text)
        command.add_argument('--state-dir', type=pathlib.Path, default=DEFAULT_STATE_DIR,
                             help=f'where the state, credentials and logs live (default: {DEFAULT_STATE_DIR})')
        command.set_defaults(command=function)
    commands.choices['kubeconfig'].add_argument('--service-account', required=True, metavar='NAMESPACE/NAME',
                                                help='the service account (created if absent)')
    commands.choices['kubeconfig'].add_argument('--duration', default='1h', help="the token's lifetime (e.g. 1h)")
    commands.choices['start'].add_argument('--timeout', type=float, default=60.0,
                                           help='seconds to wait for each server to become ready')
    commands.choices['start'].add_argument('--feature-gates', default='', metavar='NAME=true|false,...',
                                           help='feature gates of the API server and the controller manager '
                                                '(e.g. ShardedListAndWatch=true); the rest keep their defaults')
    return parser.parse_args(argv)


if __name__ == '__main__':
    sys.exit(main())
