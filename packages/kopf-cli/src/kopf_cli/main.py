"""
The ``kopf`` command line::

    kopf run handlers.py --verbose
    kopf run -m package.module --namespace=some-ns
    kopf freeze --lifetime=600 --message="Maintenance"
    kopf resume

``kopf run`` is a thin layer over ``kopf.run()``: it configures the logging,
imports the operator's code, and runs the operator with the options given.
Everything that cannot be an option (flags, registries, settings, credentials,
an event loop) comes from :class:`CLIControls` in click's context object,
which is how the operator is run in-process, e.g. in tests.
"""
from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
from typing import Any, Collection, Optional

import click

import kopf
from kopf_cli import _loading, _options, _peering
from kopf_cli._controls import CLIControls

_DEV_PRIORITY = 666
_PACKAGES = ('kopf-core', 'kopf-client', 'kopf-cli')


def _get_versions() -> str:
    versions = []
    for package in _PACKAGES:
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} (not installed)")
    return ', '.join(versions)


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"kopf: {_get_versions()}")
        ctx.exit()


@click.group(name='kopf', context_settings=dict(auto_envvar_prefix='KOPF'))
@click.option('--version', is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
              help="Show the versions of the kopf packages and exit.")
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


@main.command()
@_options.logging_options
@click.option('-n', '--namespace', 'namespaces', multiple=True, metavar='PATTERN',
              help="Serve this namespace or the namespaces matching the pattern (repeatable).")
@click.option('-A', '--all-namespaces', 'clusterwide', is_flag=True,
              help="Serve the whole cluster via the cluster-wide API endpoints.")
@click.option('--standalone', is_flag=True, default=None,
              help="Disable any peering: run as if this is the only instance of the operator.")
@click.option('--dev', 'dev', is_flag=True,
              help=f"Development mode: implies --priority={_DEV_PRIORITY}.")
@click.option('--peering', 'peering_name', type=str, default=None,
              help="The name of the peering object to use (mandatory if given).")
@click.option('--priority', type=int, default=None,
              help=f"The priority of the operator in peering (0 by default, {_DEV_PRIORITY} with --dev).")
@click.option('--liveness', 'liveness_endpoint', type=str, default=None, metavar='URL',
              help="The endpoint for the liveness probes, e.g. http://0.0.0.0:8080/healthz.")
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
) -> None:
    """Start an operator process and handle all the requests."""
    if not paths and not modules:
        raise click.UsageError("Nothing to run: pass the operator's Python files (kopf run handlers.py) "
                               "or importable modules (kopf run -m package.module), or both.")
    _check_scope(namespaces, clusterwide)
    controls = _get_controls(ctx)

    # The handlers are registered by the decorators on import: into the given registry, if any.
    if controls.registry is not None:
        kopf.set_default_registry(controls.registry)
    _loading.preload(paths=paths, modules=modules)

    try:
        _run(controls=controls, standalone=standalone, dev=dev, peering_name=peering_name, priority=priority,
             liveness_endpoint=liveness_endpoint, clusterwide=clusterwide, namespaces=namespaces)
    except kopf.LoginError as e:
        # A configuration problem, not a bug: one clear line instead of a traceback.
        raise click.ClickException(f"Cannot log in to the cluster: {e}") from e


def _run(
        *,
        controls: CLIControls,
        standalone: Optional[bool],
        dev: bool,
        peering_name: Optional[str],
        priority: Optional[int],
        liveness_endpoint: Optional[str],
        clusterwide: bool,
        namespaces: Collection[str],
) -> None:
    kopf.run(
        loop=controls.loop if controls.loop is not None else _get_default_loop(),
        registry=controls.registry,
        settings=controls.settings,
        stop_flag=controls.stop_flag,
        ready_flag=controls.ready_flag,
        vault=controls.vault,
        standalone=standalone,
        priority=priority if priority is not None else _DEV_PRIORITY if dev else None,
        peering_name=peering_name,
        liveness_endpoint=liveness_endpoint,
        clusterwide=clusterwide,
        namespaces=tuple(namespaces),
    )


_FREEZE_PRIORITY = 100


def _peering_options(fn: Any) -> Any:
    """The options of the peering commands: which peering objects, as whom."""
    fn = click.option('-n', '--namespace', 'namespaces', multiple=True, metavar='NAME',
                      help="The namespace of the operators (repeatable).")(fn)
    fn = click.option('-A', '--all-namespaces', 'clusterwide', is_flag=True,
                      help="The cluster-wide operators.")(fn)
    fn = click.option('--peering', 'peering_name', type=str, default='default', show_default=True,
                      help="The name of the peering object.")(fn)
    fn = click.option('--id', 'identity', type=str, default=None,
                      help="The identity of the freezer (user@host by default).")(fn)
    return fn


def _run_async(controls: CLIControls, coro: Any) -> None:
    if controls.loop is not None:
        controls.loop.run_until_complete(coro)
    else:
        asyncio.run(coro)


@main.command()
@_options.logging_options
@_peering_options
@click.option('--dev', 'dev', is_flag=True, help=f"Development mode: implies --priority={_DEV_PRIORITY}.")
@click.option('--priority', type=int, default=None,
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
    priority = priority if priority is not None else _DEV_PRIORITY if dev else _FREEZE_PRIORITY
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
@_peering_options
@click.pass_context
def resume(
        ctx: click.Context,
        namespaces: Collection[str],
        clusterwide: bool,
        peering_name: str,
        identity: Optional[str],
) -> None:
    """Resume the operators frozen by ``kopf freeze`` (with the same identity), at once."""
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
