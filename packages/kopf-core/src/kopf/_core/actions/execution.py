"""
Execution of handlers with their error protocol: retries, timeouts, backoffs.

One call executes the handlers that are ready now, each once, in the order of
declaration, and returns their outcomes; the caller persists them and decides
when to come back. The log lines are part of the public interface (users'
tests assert on them), so their wording is fixed.
"""
from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import time
from typing import Any, Callable, Collection, Dict, Mapping, Optional, Protocol, Sequence, Tuple

from kopf._cogs.configs import configuration
from kopf._cogs.helpers import instruments, typedefs
from kopf._core.actions import errors, invocation, lifecycles, progression
from kopf._core.intents import handlers


class SubExecutionScope(Protocol):
    """The sub-handlers of one invocation of a handler (see ``subhandling``)."""

    @property
    def subrefs(self) -> Collection[str]:
        """The ids of all descendant sub-handlers seen so far."""

    async def finish(self) -> None:
        """Execute the registered but not yet executed sub-handlers (may raise a retry)."""


# The scope of the handler being invoked now: @kopf.subhandler & co register into it.
subexecution_var: contextvars.ContextVar[SubExecutionScope] = contextvars.ContextVar('subexecution_var')


@dataclasses.dataclass(frozen=True)
class ExecutionContext:
    """What one execution round needs besides the handlers."""
    settings: configuration.OperatorSettings
    logger: typedefs.Logger
    build_kwargs: Callable[[handlers.BaseHandler, progression.HandlerState], Dict[str, Any]]
    # Makes the sub-handlers' scope for an invocation (only for resource-changing handlers).
    subscope: Optional[Callable[[handlers.BaseHandler, progression.HandlerState, Mapping[str, Any]],
                                SubExecutionScope]] = None
    # Which of the due handlers run in a round, and in which order; None is the default lifecycle.
    lifecycle: Optional[lifecycles.LifeCycleFn] = None
    # The handler's label of the runs in the metrics; None is each handler's own id. The sub-handlers'
    # ids are often made of the object's contents (e.g. an item's name): they are counted together.
    metrics_handler: Optional[str] = None


async def execute_handlers_once(
        *,
        handlers_: Sequence[handlers.BaseHandler],
        state: progression.State,
        context: ExecutionContext,
        default_errors: handlers.ErrorsMode = handlers.ErrorsMode.TEMPORARY,
) -> Mapping[handlers.HandlerId, progression.HandlerOutcome]:
    """Run the handlers that are due now (not finished, not delayed) and chosen by the lifecycle, each once."""
    outcomes: Dict[handlers.HandlerId, progression.HandlerOutcome] = {}
    state, due = state.due(handlers_)  # the lifecycle sees every handler's state, not only the due ones
    for handler in lifecycles.plan(context.lifecycle, due, state=state):
        outcomes[handler.id] = await execute_handler_once(
            handler=handler, state=state[handler.id], context=context, default_errors=default_errors)
    return outcomes


async def execute_handler_once(
        *,
        handler: handlers.BaseHandler,
        state: progression.HandlerState,
        context: ExecutionContext,
        default_errors: handlers.ErrorsMode = handlers.ErrorsMode.TEMPORARY,
) -> progression.HandlerOutcome:
    """Invoke one handler once and classify its exception (if any) into an outcome."""
    exceeded = _check_limits(handler, state, context.logger)
    if exceeded is not None:
        return exceeded
    kwargs = context.build_kwargs(handler, state)
    started = time.monotonic()
    outcome, raised = await _invoke_once(handler=handler, state=state, context=context, kwargs=kwargs,
                                         default_errors=default_errors)
    resource = kwargs.get('resource')  # none for the activities
    instruments.record_handler_run(context.metrics_handler or str(handler.id),
                                   resource.name if resource is not None else '',
                                   _classify(outcome, raised=raised), time.monotonic() - started)
    return outcome


def _classify(outcome: progression.HandlerOutcome, *, raised: bool) -> str:
    """The outcome's name in the metrics."""
    if not raised:
        return instruments.SUCCESS
    if isinstance(outcome.exception, errors.HandlerChildrenRetry):
        return instruments.RETRY
    if outcome.exception is None:
        return instruments.IGNORED_ERROR
    return instruments.PERMANENT_ERROR if outcome.final else instruments.TEMPORARY_ERROR


async def _invoke_once(
        *,
        handler: handlers.BaseHandler,
        state: progression.HandlerState,
        context: ExecutionContext,
        kwargs: Dict[str, Any],
        default_errors: handlers.ErrorsMode,
) -> Tuple[progression.HandlerOutcome, bool]:
    """The invocation and its outcome; and whether the handler has raised an exception."""
    logger = context.logger
    errors_mode = handler.errors if handler.errors is not None else default_errors
    backoff = handler.backoff if handler.backoff is not None else _default_backoff(context.settings)
    title = handler.title
    scope = context.subscope(handler, state, kwargs) if context.subscope is not None else None
    token = subexecution_var.set(scope) if scope is not None else None
    try:
        logger.debug(f"{title} is invoked.")
        result = await invocation.invoke(handler.fn, kwargs=kwargs, settings=context.settings)
        if scope is not None:
            await scope.finish()
    except errors.HandlerChildrenRetry as e:
        logger.debug(f"{title} has unfinished sub-handlers. Will retry soon.")
        return progression.HandlerOutcome(final=False, exception=e, delay=e.delay,
                                          subrefs=tuple(scope.subrefs) if scope is not None else ()), True
    except errors.PermanentError as e:
        logger.error(f"{title} failed permanently: {_text(e)}")
        return progression.HandlerOutcome(final=True, exception=e), True
    except errors.TemporaryError as e:
        return _temporary_outcome(handler=handler, state=state, logger=logger, exc=e, delay=e.delay), True
    except asyncio.CancelledError:
        logger.warning(f"{title} is cancelled. Will escalate.")
        raise
    except Exception as e:
        return _arbitrary_outcome(handler=handler, state=state, logger=logger, exc=e,
                                  errors_mode=errors_mode, backoff=backoff), True
    else:
        logger.info(f"{title} {_success_wording(handler, result)}.")
        return progression.HandlerOutcome(final=True, result=result,
                                          subrefs=tuple(scope.subrefs) if scope is not None else ()), False
    finally:
        if token is not None:
            subexecution_var.reset(token)


def _success_wording(handler: handlers.BaseHandler, result: Any) -> str:
    """A login handler that returns nothing has found no credentials: Kopf 1.45.2 says "succeeded"."""
    if (isinstance(handler, handlers.ActivityHandler) and result is None
            and handler.activity == handlers.Activity.AUTHENTICATION):
        return "found no credentials"
    return "succeeded"


def _check_limits(
        handler: handlers.BaseHandler,
        state: progression.HandlerState,
        logger: typedefs.Logger,
) -> Optional[progression.HandlerOutcome]:
    """A final failure if the handler's timeout or retries are exceeded (checked before the attempt)."""
    # Before the attempt, not after: a restarted operator must not exceed them either.
    exc: BaseException
    if handler.timeout is not None and state.runtime.total_seconds() >= handler.timeout:
        exc = errors.HandlerTimeoutError(f"{handler.title} has timed out after {state.runtime}.")
    elif handler.retries is not None and state.retries >= handler.retries:
        exc = errors.HandlerRetriesError(f"{handler.title} has exceeded {state.retries} retries.")
    else:
        return None
    logger.error(str(exc))
    return progression.HandlerOutcome(final=True, exception=exc)


def _text(exc: BaseException) -> str:
    return str(exc) or repr(exc)


def _default_backoff(settings: configuration.OperatorSettings) -> float:
    # Kept as configured (not coerced to float): the log line shows "60 seconds", not "60.0 seconds".
    return settings.execution.default_backoff


def _temporary_outcome(
        *,
        handler: handlers.BaseHandler,
        state: progression.HandlerState,
        logger: typedefs.Logger,
        exc: BaseException,
        delay: Optional[float],
) -> progression.HandlerOutcome:
    # If the next attempt is already known to be beyond the limits, fail now: waiting for
    # the delay only to declare the failure then would waste the time and a handling cycle.
    title, text = handler.title, _text(exc)
    if handler.timeout is not None and delay is not None and \
            state.runtime.total_seconds() + delay >= handler.timeout:
        message = f"{title} failed temporarily but will time out after {handler.timeout} seconds: {text}"
        logger.error(message)
        return progression.HandlerOutcome(final=True, exception=errors.HandlerTimeoutError(message))
    if handler.retries is not None and state.retries + 1 >= handler.retries:
        message = f"{title} failed temporarily but will exceed {handler.retries} retries: {text}"
        logger.error(message)
        return progression.HandlerOutcome(final=True, exception=errors.HandlerRetriesError(message))
    logger.error(f"{title} failed temporarily: {text}")
    return progression.HandlerOutcome(final=False, exception=exc, delay=delay)


def _arbitrary_outcome(
        *,
        handler: handlers.BaseHandler,
        state: progression.HandlerState,
        logger: typedefs.Logger,
        exc: BaseException,
        errors_mode: handlers.ErrorsMode,
        backoff: float,
) -> progression.HandlerOutcome:
    title, text = handler.title, _text(exc)
    prefix = f"{title} failed with an exception and will"
    if errors_mode == handlers.ErrorsMode.IGNORED:
        logger.exception(f"{prefix} ignore it: {text}")
        return progression.HandlerOutcome(final=True)
    if errors_mode == handlers.ErrorsMode.PERMANENT:
        logger.exception(f"{prefix} stop now: {text}")
        return progression.HandlerOutcome(final=True, exception=exc)
    if handler.timeout is not None and state.runtime.total_seconds() + backoff >= handler.timeout:
        logger.exception(f"{prefix} stop now (it would time out in {handler.timeout} seconds "
                         f"on the next attempt): {text}")
        return progression.HandlerOutcome(final=True, exception=exc)
    if handler.retries is not None and state.retries + 1 >= handler.retries:
        logger.exception(f"{prefix} stop now (it would exceed {handler.retries} retries "
                         f"on the next attempt): {text}")
        return progression.HandlerOutcome(final=True, exception=exc)
    logger.exception(f"{prefix} try again in {backoff} seconds: {text}")
    return progression.HandlerOutcome(final=False, exception=exc, delay=backoff)


