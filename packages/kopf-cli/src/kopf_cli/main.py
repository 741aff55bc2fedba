"""
The ``kopf`` command line::

    kopf run handlers.py --verbose
    kopf run -m package.module --namespace=some-ns
    kopf freeze --peering=default --all-namespaces --lifetime=600 --message="Maintenance"
    kopf resume --peering=default --all-namespaces

``kopf run`` is a thin layer over ``kopf.run()``: it configures the logging,
imports the operator's code, and runs the operator with the options given.
Everything that cannot be an option (flags, registries, settings, credentials,
an event loop) comes from :class:`CLIControls` in click's context object,
which is how the operator is run in-process, e.g. in tests.
"""
from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
from typing import Any, Callable, Collection, Iterator, Optional

import click

import kopf
import kopf.metrics
from kopf_cli import _loading, _options, _peering
from kopf_cli._controls import CLIControls

_DEV_PRIORITY = 666
_UNREACHABLE = "Cannot reach the cluster (check the server in the kubeconfig, and the network)"


@click.group(name='kopf', context_settings=dict(auto_envvar_prefix='KOPF'))
@_options.version_option
def main() -> None:
    """Kubernetes Operator Pythonic Framework: run and control the operators."""


def _get_controls(ctx: click.Context) -> CLIControls:
    obj = ctx.find_object(CLIControls)
    return obj if obj is not None else CLIControls()


def _get_default_loop() -> Optional[asyncio.AbstractEventLoop]:
    """The uvloop's event loop if uvloop is installed (as documented), else the default one."""
    try:
        uvloop: Any = importlib.import_module('uvloop')
    except ImportError:
        return None
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def _check_scope(namespaces: Collection[str], clusterwide: bool) -> None:
    if namespaces and clusterwide:
        raise click.UsageError("Either --namespace or --all-namespaces can be used, not both.")


def _with_legacy_namespace(namespaces: Collection[str]) -> Collection[str]:
    """
    Add the namespace of ``$KOPF_RUN_NAMESPACE``, if set.

    It is the variable of the times when only one namespace could be served;
    deployments still set it, and Kopf still reads it, in addition to
    ``$KOPF_RUN_NAMESPACES`` (click's own variable of ``--namespace``).
    """
    legacy = os.environ.get('KOPF_RUN_NAMESPACE')
    return (*namespaces, legacy) if legacy else namespaces


@main.command(cls=_options.CommandWithOptionalValues)
@_options.logging_options
@click.option('-n', '--namespace', 'namespaces', multiple=True, metavar='PATTERN',
              callback=_options.check_namespaces,
              help="Serve this namespace or the namespaces matching the pattern (repeatable).")
@click.option('-A', '--all-namespaces', 'clusterwide', is_flag=True,
              help="Serve the whole cluster via the cluster-wide API endpoints.")
@click.option('--standalone', is_flag=True, default=None,
              help="Disable any peering: run as if this is the only instance of the operator.")
@click.option('--dev', 'dev', is_flag=True,
              help=f"Development mode: --priority={_DEV_PRIORITY}, whatever --priority says.")
@click.option('-P', '--peering', 'peering_name', type=str, default=None, envvar='KOPF_RUN_PEERING',
              help="The name of the peering object to use (mandatory if given).")
@click.option('-p', '--priority', type=int, default=None,
              help=f"The priority of the operator in peering (0 by default, {_DEV_PRIORITY} with --dev).")
@click.option('-L', '--liveness', 'liveness_endpoint', type=str, default=None, metavar='URL',
              help="The endpoint for the liveness probes, e.g. http://0.0.0.0:8080/healthz.")
@click.option('--metrics', 'metrics_endpoint', type=str, default=None, metavar='URL',
              help="The endpoint for Prometheus to scrape, e.g. http://0.0.0.0:9090/metrics "
                   "(needs kopf-client[metrics]).")
@click.option('--leader-election', 'leader_election', is_flag=False, flag_value='', default=None,
              metavar='[=LEASE-NAME]',
              help="Handle the objects only while holding this Lease (kopf-leader-<peering name> if no name; "
                   "the name only with '=', so that the next argument is never taken for it).")
@click.option('--leader-election-namespace', 'leader_election_namespace', type=str, default=None,
              metavar='NAMESPACE', help="The namespace of the Lease (the pod's, or the first served, by default).")
@click.option('--shards', 'shards', type=click.Choice(['auto']), default=None,
              help="auto: the replicas split the objects among themselves (a membership Lease each).")
@click.option('--shard-by', 'shard_by', type=click.Choice(['uid', 'namespace']), default=None,
              help="What --shards=auto hashes to split the objects (uid by default).")
@click.option('-m', '--module', 'modules', multiple=True, metavar='MODULE',
              help="An importable module with the handlers, as in \"python -m\" (repeatable).")
@click.argument('paths', nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.pass_context
def run(
        ctx: click.Context,
        paths: Collection[str],
        modules: Collection[str],
        namespaces: Collection[str],
        clusterwide: bool,
        standalone: Optional[bool],
        dev: bool,
        peering_name: Optional[str],
        priority: Optional[int],
        liveness_endpoint: Optional[str],
        metrics_endpoint: Optional[str],
        leader_election: Optional[str],
        leader_election_namespace: Optional[str],
        shards: Optional[str],
        shard_by: Optional[str],
) -> None:
    """Start an operator process and handle all the requests."""
    namespaces = _with_legacy_namespace(namespaces)
    _check_scope(namespaces, clusterwide)
    _check_leader_election(leader_election, leader_election_namespace, shards)
    controls = _get_controls(ctx)

    # The handlers are registered by the decorators on import: into the given registry, if any.
    if controls.registry is not None:
        kopf.set_default_registry(controls.registry)
    _loading.preload(paths=paths, modules=modules)
    _loading.check_handlers(controls.registry if controls.registry is not None else kopf.get_default_registry())

    with _start_up_errors_as_messages():
        kopf.run(
            loop=controls.loop if controls.loop is not None else _get_default_loop(),
            registry=controls.registry,
            settings=controls.settings,
            stop_flag=controls.stop_flag,
            ready_flag=controls.ready_flag,
            vault=controls.vault,
            standalone=standalone,
            priority=_DEV_PRIORITY if dev else priority,  # --dev wins, as in Kopf
            peering_name=peering_name,
            liveness_endpoint=liveness_endpoint,
            metrics_endpoint=metrics_endpoint,
            leader_election=None if leader_election is None else leader_election or True,
            leader_election_namespace=leader_election_namespace,
            shards=shards,
            shard_by=shard_by,
            clusterwide=clusterwide,
            namespaces=tuple(namespaces),
        )


@contextlib.contextmanager
def _start_up_errors_as_messages() -> Iterator[None]:
    """The operator's configuration problems, not bugs: one clear line each instead of a traceback."""
    try:
        yield
    except (kopf.LivenessEndpointError, kopf.metrics.MetricsEndpointError) as e:  # a bad URL, a port in use
        raise click.ClickException(str(e)) from e
    except kopf.LoginError as e:
        raise click.ClickException(f"Cannot log in to the cluster: {e}") from e
    except (kopf.AdmissionSetupError, kopf.LeaseError) as e:  # webhooks or a Lease that cannot work
        raise click.ClickException(str(e)) from e
    except OSError as e:
        # The network errors that remain after the client's retries: the cluster is not there.
        raise click.ClickException(f"{_UNREACHABLE}: {e}") from e


def _check_leader_election(
        lease_name: Optional[str],
        lease_namespace: Optional[str],
        shards: Optional[str] = None,
) -> None:
    """The leader election's options that cannot work together (its value never swallows a file: see _options)."""
    if lease_namespace is not None and lease_name is None:
        raise click.UsageError("--leader-election-namespace is given without --leader-election: "
                               "add --leader-election, or drop the namespace.")
    if shards is not None and lease_name is not None:
        raise click.UsageError("--shards=auto and --leader-election cannot be combined: every replica serves its "
                               "share, or only the leader serves everything. Use one of them.")


_FREEZE_PRIORITY = 100


def _peering_options(command: str) -> Callable[[Any], Any]:
    """
    The options of the peering commands: which peering objects, as whom.

    The variables are named as click names them for Kopf's options
    (``KOPF_FREEZE_ID``, ``KOPF_RESUME_PEERING``, ...), so the same
    environment works for both.
    """
    prefix = f'KOPF_{command.upper()}'

    def decorate(fn: Any) -> Any:
        fn = click.option('-n', '--namespace', 'namespaces', multiple=True, metavar='NAME',
                          help="The namespace of the operators (repeatable).")(fn)
        fn = click.option('-A', '--all-namespaces', 'clusterwide', is_flag=True,
                          help="The cluster-wide operators.")(fn)
        fn = click.option('-P', '--peering', 'peering_name', type=str, required=True, envvar=f'{prefix}_PEERING',
                          help="The name of the peering object (e.g. \"default\").")(fn)
        fn = click.option('-i', '--id', 'identity', type=str, default=None, envvar=f'{prefix}_ID',
                          help="The identity of the freezer (user@host by default).")(fn)
        return fn
    return decorate


def _run_async(controls: CLIControls, coro: Any) -> None:
    try:
        if controls.loop is not None:
            controls.loop.run_until_complete(coro)
        else:
            asyncio.run(coro)
    except kopf.clients.APIForbiddenError as e:
        raise click.ClickException(f"Not permitted to update the peering object: {e}") from e
    except OSError as e:
        raise click.ClickException(f"{_UNREACHABLE}: {e}") from e


@main.command()
@_options.logging_options
@_peering_options('freeze')
@click.option('--dev', 'dev', is_flag=True,
              help=f"Development mode: --priority={_DEV_PRIORITY}, whatever --priority says.")
@click.option('-p', '--priority', type=int, default=None,
              help=f"The priority of the freeze ({_FREEZE_PRIORITY} by default, {_DEV_PRIORITY} with --dev).")
@click.option('-t', '--lifetime', type=click.IntRange(min=1), required=True,
              help="For how long (seconds) the operators stay frozen.")
@click.option('-m', '--message', type=str, default=None, help="Why the operators are frozen (for the logs).")
@click.pass_context
def freeze(
        ctx: click.Context,
        namespaces: Collection[str],
        clusterwide: bool,
        peering_name: str,
        identity: Optional[str],
        dev: bool,
        priority: Optional[int],
        lifetime: int,
        message: Optional[str],
) -> None:
    """Pause the operators with lower priorities in the peering, for some time."""
    _peering.check_namespaces(namespaces, clusterwide)
    controls = _get_controls(ctx)
    # --dev wins over --priority, as in Kopf.
    priority = _DEV_PRIORITY if dev else priority if priority is not None else _FREEZE_PRIORITY
    identity = identity or _peering.get_default_identity()
    if message:
        _peering.logger.info(f"Freezing the operators by {identity!r} for {lifetime}s: {message}")
    _run_async(controls, _peering.update_peering(
        vault=controls.vault,
        settings=controls.settings,
        peering_name=peering_name,
        namespaces=namespaces,
        clusterwide=clusterwide,
        identity=identity,
        entry=_peering.build_entry(priority=priority, lifetime=lifetime),
    ))


@main.command()
@_options.logging_options
@_peering_options('resume')
@click.pass_context
def resume(
        ctx: click.Context,
        namespaces: Collection[str],
        clusterwide: bool,
        peering_name: str,
        identity: Optional[str],
) -> None:
    """Resume the operators frozen by "kopf freeze" (with the same identity), at once."""
    _peering.check_namespaces(namespaces, clusterwide)
    controls = _get_controls(ctx)
    _run_async(controls, _peering.update_peering(
        vault=controls.vault,
        settings=controls.settings,
        peering_name=peering_name,
        namespaces=namespaces,
        clusterwide=clusterwide,
        identity=identity or _peering.get_default_identity(),
        entry=None,
    ))
