"""
The command line options shared by several commands.

Every command configures the logging first, from its logging options, before
anything else is imported or done: otherwise, the early messages would go out
in the wrong format, or would be lost or shown in spite of the verbosity.
"""
from __future__ import annotations

import functools
import importlib.metadata
import os
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TypeAlias

import click

import kopf

# The choices of names: click.Choice is generic for the type checkers only (in click 8.2+).
if TYPE_CHECKING:
    _NameChoice: TypeAlias = click.Choice[str]
else:
    _NameChoice = click.Choice


class LogFormatParamType(_NameChoice):
    """The log formats by their names (any case): ``plain``, ``full``, ``json``."""

    def __init__(self) -> None:
        super().__init__(choices=[log_format.name.lower() for log_format in kopf.LogFormat], case_sensitive=False)

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        if isinstance(value, kopf.LogFormat):
            return value
        name = super().convert(value, param, ctx)
        return kopf.LogFormat[str(name).upper()]


def logging_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """
    Add the logging options to a command; configure the logging before the command runs.

    The command gets the logging options' values in addition to its own arguments,
    so it is another callable than the decorated function.
    """

    @click.option('-v', '--verbose', is_flag=True, help="Show what Kopf is doing, but hide the low-level logs.")
    @click.option('-d', '--debug', is_flag=True, help="Extremely verbose: log the asyncio & API internals too.")
    @click.option('-q', '--quiet', is_flag=True, help="Be quiet: only show warnings and errors.")
    @click.option('--log-format', type=LogFormatParamType(), default='full', show_default=True,
                  help="The format of the logs.")
    @click.option('--log-prefix/--no-log-prefix', default=None,
                  help="Whether to prefix the object-related messages with the object's name "
                       "(by default: yes for text logs, no for JSON logs).")
    @click.option('--log-refkey', type=str, default=None,
                  help="For JSON logs, the key of the object reference (by default: \"object\").")
    @functools.wraps(fn)
    def wrapper(
            *args: Any,
            verbose: bool,
            debug: bool,
            quiet: bool,
            log_format: kopf.LogFormat,
            log_prefix: Optional[bool],
            log_refkey: Optional[str],
            **kwargs: Any,
    ) -> Any:
        kopf.configure(
            debug=debug,
            verbose=verbose,
            quiet=quiet,
            log_format=log_format,
            log_prefix=log_prefix,
            log_refkey=log_refkey,
        )
        return fn(*args, **kwargs)

    return wrapper


KOPF_RELEASE = '1.45.2'  # the release of Kopf whose API and behaviour these packages follow


def version_line() -> str:
    """
    Kopf's ``kopf, version X`` (scripts parse it), then which packages and which Kopf release.

    E.g. ``kopf, version 0.1.0 (kopf-core 0.1.0, kopf-cli 0.1.0), compatible with Kopf 1.45.2``.
    """
    cli = importlib.metadata.version('kopf-cli')
    return f"kopf, version {kopf.__version__} (kopf-core {kopf.__version__}, kopf-cli {cli}), " \
           f"compatible with Kopf {KOPF_RELEASE}"


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_line())
        ctx.exit()


version_option = click.option(
    '--version', is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
    help="Show the version and exit.")


def check_namespaces(ctx: click.Context, param: click.Parameter, value: Sequence[str]) -> Sequence[str]:
    """
    Refuse the ``--namespace`` patterns that can never match a namespace (as the core does), before the run.

    ``$KOPF_RUN_NAMESPACE`` (the legacy variable that ``kopf run`` adds to them) is checked too,
    so that every typo is one line of usage error, not a traceback after the operator's imports.
    """
    legacy = os.environ.get('KOPF_RUN_NAMESPACE')
    try:
        kopf.check_namespace_patterns([*value, *([legacy] if legacy else [])])
    except ValueError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from e
    return value


class CommandWithOptionalValues(click.Command):
    """
    A command whose options with an optional value take it only with ``=``, never from the next argument.

    Click gives such an option the next argument if it does not look like an option:
    ``kopf run --leader-election op.py`` would take the operator's file for the Lease's name.
    Here, the bare option is its flag (``--leader-election`` is ``--leader-election=``), and
    a value is written as ``--leader-election=NAME``.
    """
    optional_values: Sequence[str] = ('--leader-election',)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, attach_optional_values(args, self.optional_values))


def attach_optional_values(args: Sequence[str], names: Sequence[str]) -> list[str]:
    """Write the bare options of ``names`` as ``--name=`` (an empty value: the flag), up to ``--``."""
    result: list[str] = []
    for index, arg in enumerate(args):
        if arg == '--':
            return [*result, *args[index:]]
        result.append(f'{arg}=' if arg in names else arg)
    return result
