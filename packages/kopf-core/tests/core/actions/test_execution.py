"""
Execution of handlers with the error protocol, and the exact log lines of each outcome.

The handlers are real functions invoked for real; the clock of the handlers'
states is frozen (``progression.utcnow``) so that the runtime, the timeouts and
the "timed out after" lines are exact. The log records are captured with caplog,
without the per-object prefix (which only the formatter adds).
"""
import asyncio
import dataclasses
import datetime
import logging
from typing import Any, Callable, Collection, Dict, List, Optional, Tuple

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.actions import execution, lifecycles, progression
from kopf._core.actions.errors import (
    HandlerChildrenRetry,
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)
from kopf._core.actions.execution import ExecutionContext, execute_handler_once, execute_handlers_once
from kopf._core.actions.progression import HandlerOutcome, HandlerState, State
from kopf._core.intents.handlers import ActivityHandler, BaseHandler, ChangingHandler, ErrorsMode, HandlerId

NOW = datetime.datetime(2026, 11, 22, 8, 14, 26, 515992, tzinfo=datetime.timezone.utc)
LOGGER = logging.getLogger('kopf.objects')


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progression, 'utcnow', lambda: NOW)


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


@pytest.fixture()
def settings() -> OperatorSettings:
    return OperatorSettings()


@pytest.fixture()
def context(settings: OperatorSettings) -> ExecutionContext:
    return ExecutionContext(settings=settings, logger=LOGGER, build_kwargs=lambda handler, state: {})


def messages(caplog: pytest.LogCaptureFixture) -> List[Tuple[str, str]]:
    return [(record.levelname, record.getMessage()) for record in caplog.records]


def make_handler(fn: Callable[..., Any], *, cls: Any = ChangingHandler, id: str = 'fn',
                 errors: Optional[ErrorsMode] = None, timeout: Optional[float] = None,
                 retries: Optional[int] = None, backoff: Optional[float] = None) -> Any:
    return cls(fn=fn, id=HandlerId(id), param=None, errors=errors, timeout=timeout, retries=retries, backoff=backoff)


def raising(exc: BaseException) -> Callable[..., Any]:
    def fn(**_: Any) -> None:
        raise exc
    return fn


def state_of(*, runtime: float = 0, retries: int = 0) -> HandlerState:
    return HandlerState(started=NOW - datetime.timedelta(seconds=runtime), retries=retries)


async def execute(context: ExecutionContext, handler: BaseHandler, state: Optional[HandlerState] = None,
                  default_errors: ErrorsMode = ErrorsMode.TEMPORARY) -> HandlerOutcome:
    return await execute_handler_once(handler=handler, state=state if state is not None else state_of(),
                                      context=context, default_errors=default_errors)


# Success.

@pytest.mark.parametrize('is_async', [pytest.param(False, id='sync'), pytest.param(True, id='async')])
async def test_success_is_logged_and_gives_the_result(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext, is_async: bool) -> None:
    def sync_fn(**_: Any) -> Any:
        return {'x': 1}

    async def async_fn(**_: Any) -> Any:
        return {'x': 1}

    outcome = await execute(context, make_handler(async_fn if is_async else sync_fn))
    assert outcome == HandlerOutcome(final=True, result={'x': 1})
    assert messages(caplog) == [('DEBUG', "Handler 'fn' is invoked."), ('INFO', "Handler 'fn' succeeded.")]


def test_activity_handlers_are_titled_as_activities() -> None:
    assert make_handler(lambda **_: None, cls=ActivityHandler).title == "Activity 'fn'"


async def test_activity_success_is_logged_as_activity(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    await execute(context, make_handler(lambda **_: None, cls=ActivityHandler))
    assert messages(caplog)[-1] == ('INFO', "Activity 'fn' succeeded.")


async def test_handler_gets_the_kwargs_built_for_it_and_its_state(settings: OperatorSettings) -> None:
    seen: List[Any] = []
    state = state_of(retries=5)
    handler = make_handler(lambda **kwargs: seen.append(kwargs))
    context = ExecutionContext(settings=settings, logger=LOGGER,
                               build_kwargs=lambda h, s: {'handler': h, 'retry': s.retries})
    await execute(context, handler, state)
    assert seen == [{'handler': handler, 'retry': 5}]


# Temporary errors.

async def test_temporary_error_is_retried_after_its_delay(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    exc = TemporaryError("not yet", delay=10)
    outcome = await execute(context, make_handler(raising(exc)))
    assert outcome == HandlerOutcome(final=False, exception=exc, delay=10)
    assert messages(caplog)[1:] == [('ERROR', "Handler 'fn' failed temporarily: not yet")]
    assert caplog.records[-1].exc_info is None


async def test_temporary_error_without_a_message_is_logged_by_repr(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    class CustomError(TemporaryError):
        def __str__(self) -> str:
            return ''

    await execute(context, make_handler(raising(CustomError(delay=1))))
    assert messages(caplog)[-1] == ('ERROR', "Handler 'fn' failed temporarily: CustomError(None)")


async def test_temporary_error_that_would_time_out_fails_now(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    outcome = await execute(context, make_handler(raising(TemporaryError("not yet", delay=10)), timeout=60),
                            state_of(runtime=55))
    message = "Handler 'fn' failed temporarily but will time out after 60 seconds: not yet"
    assert messages(caplog)[1:] == [('ERROR', message)]
    assert outcome.final
    assert isinstance(outcome.exception, HandlerTimeoutError)
    assert str(outcome.exception) == message


async def test_temporary_error_within_the_timeout_is_retried(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    outcome = await execute(context, make_handler(raising(TemporaryError("not yet", delay=10)), timeout=60),
                            state_of(runtime=49))
    assert messages(caplog)[1:] == [('ERROR', "Handler 'fn' failed temporarily: not yet")]
    assert not outcome.final


async def test_temporary_error_that_would_exceed_the_retries_fails_now(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    outcome = await execute(context, make_handler(raising(TemporaryError("not yet", delay=10)), retries=3),
                            state_of(retries=2))
    message = "Handler 'fn' failed temporarily but will exceed 3 retries: not yet"
    assert messages(caplog)[1:] == [('ERROR', message)]
    assert outcome.final
    assert isinstance(outcome.exception, HandlerRetriesError)
    assert str(outcome.exception) == message


async def test_temporary_error_within_the_retries_is_retried(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    outcome = await execute(context, make_handler(raising(TemporaryError("not yet", delay=10)), retries=3),
                            state_of(retries=1))
    assert messages(caplog)[1:] == [('ERROR', "Handler 'fn' failed temporarily: not yet")]
    assert not outcome.final


# Permanent errors.

async def test_permanent_error_fails_the_handler(caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    exc = PermanentError("bad")
    outcome = await execute(context, make_handler(raising(exc), retries=100, timeout=1000))
    assert outcome == HandlerOutcome(final=True, exception=exc)
    assert messages(caplog)[1:] == [('ERROR', "Handler 'fn' failed permanently: bad")]
    assert caplog.records[-1].exc_info is None


# Arbitrary errors.

@pytest.mark.parametrize('errors, default_errors', [
    pytest.param(None, ErrorsMode.TEMPORARY, id='default'),
    pytest.param(ErrorsMode.TEMPORARY, ErrorsMode.PERMANENT, id='explicit'),
])
async def test_arbitrary_error_in_temporary_mode_is_retried_after_the_default_backoff(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext,
        errors: Optional[ErrorsMode], default_errors: ErrorsMode) -> None:
    exc = ValueError("boom")
    outcome = await execute(context, make_handler(raising(exc), errors=errors), default_errors=default_errors)
    assert outcome == HandlerOutcome(final=False, exception=exc, delay=60)
    assert messages(caplog)[1:] == [
        ('ERROR', "Handler 'fn' failed with an exception and will try again in 60 seconds: boom"),
    ]
    assert caplog.records[-1].exc_info is not None


async def test_arbitrary_error_is_retried_after_the_handlers_backoff(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    outcome = await execute(context, make_handler(raising(ValueError("boom")), backoff=30))
    assert outcome.delay == 30
    assert messages(caplog)[-1] == (
        'ERROR', "Handler 'fn' failed with an exception and will try again in 30 seconds: boom")


async def test_arbitrary_error_is_retried_after_the_configured_default_backoff(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext, settings: OperatorSettings) -> None:
    settings.execution.default_backoff = 5
    outcome = await execute(context, make_handler(raising(ValueError("boom"))))
    assert outcome.delay == 5
    assert messages(caplog)[-1] == (
        'ERROR', "Handler 'fn' failed with an exception and will try again in 5 seconds: boom")


async def test_arbitrary_error_without_a_message_is_logged_by_repr(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    await execute(context, make_handler(raising(ValueError())))
    assert messages(caplog)[-1] == (
        'ERROR', "Handler 'fn' failed with an exception and will try again in 60 seconds: ValueError()")


async def test_arbitrary_error_in_permanent_mode_stops_now(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    exc = ValueError("boom")
    outcome = await execute(context, make_handler(raising(exc), errors=ErrorsMode.PERMANENT))
    assert outcome == HandlerOutcome(final=True, exception=exc)
    assert messages(caplog)[1:] == [('ERROR', "Handler 'fn' failed with an exception and will stop now: boom")]
    assert caplog.records[-1].exc_info is not None


async def test_arbitrary_error_in_ignored_mode_is_ignored(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    outcome = await execute(context, make_handler(raising(ValueError("boom")), errors=ErrorsMode.IGNORED))
    assert outcome == HandlerOutcome(final=True)
    assert messages(caplog)[1:] == [('ERROR', "Handler 'fn' failed with an exception and will ignore it: boom")]
    assert caplog.records[-1].exc_info is not None


async def test_arbitrary_error_that_would_time_out_stops_now(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    exc = ValueError("boom")
    outcome = await execute(context, make_handler(raising(exc), timeout=90, backoff=30), state_of(runtime=60))
    assert outcome == HandlerOutcome(final=True, exception=exc)
    assert messages(caplog)[1:] == [
        ('ERROR', "Handler 'fn' failed with an exception and will stop now "
                  "(it would time out in 90 seconds on the next attempt): boom"),
    ]
    assert caplog.records[-1].exc_info is not None


async def test_arbitrary_error_that_would_exceed_the_retries_stops_now(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    exc = ValueError("boom")
    outcome = await execute(context, make_handler(raising(exc), retries=3), state_of(retries=2))
    assert outcome == HandlerOutcome(final=True, exception=exc)
    assert messages(caplog)[1:] == [
        ('ERROR', "Handler 'fn' failed with an exception and will stop now "
                  "(it would exceed 3 retries on the next attempt): boom"),
    ]


async def test_arbitrary_error_within_the_limits_is_retried(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    outcome = await execute(context, make_handler(raising(ValueError("boom")), retries=3, timeout=100, backoff=30),
                            state_of(retries=1, runtime=60))
    assert not outcome.final
    assert messages(caplog)[-1] == (
        'ERROR', "Handler 'fn' failed with an exception and will try again in 30 seconds: boom")


# Limits reached before the attempt (e.g. after a restart).

async def test_handler_beyond_its_timeout_is_not_invoked(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    calls: List[Any] = []
    outcome = await execute(context, make_handler(lambda **_: calls.append(1), timeout=60), state_of(runtime=100))
    assert calls == []
    assert outcome.final
    assert isinstance(outcome.exception, HandlerTimeoutError)
    assert messages(caplog) == [('ERROR', "Handler 'fn' has timed out after 0:01:40.")]


async def test_handler_beyond_its_retries_is_not_invoked(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    calls: List[Any] = []
    outcome = await execute(context, make_handler(lambda **_: calls.append(1), retries=3), state_of(retries=3))
    assert calls == []
    assert outcome.final
    assert isinstance(outcome.exception, HandlerRetriesError)
    assert messages(caplog) == [('ERROR', "Handler 'fn' has exceeded 3 retries.")]


# Cancellation.

async def test_cancellation_is_logged_and_escalated(
        caplog: pytest.LogCaptureFixture, context: ExecutionContext) -> None:
    async def fn(**_: Any) -> None:
        raise asyncio.CancelledError()

    with pytest.raises(asyncio.CancelledError):
        await execute(context, make_handler(fn))
    assert messages(caplog)[1:] == [('WARNING', "Handler 'fn' is cancelled. Will escalate.")]


# Sub-handlers.

class FakeScope:
    def __init__(self, *, subrefs: Collection[str], exc: Optional[BaseException] = None) -> None:
        self.subrefs = subrefs
        self.exc = exc
        self.finished = False

    async def finish(self) -> None:
        self.finished = True
        if self.exc is not None:
            raise self.exc


def context_with(settings: OperatorSettings, scope: FakeScope) -> ExecutionContext:
    return ExecutionContext(settings=settings, logger=LOGGER, build_kwargs=lambda h, s: {},
                            subscope=lambda h, s, kwargs: scope)


@pytest.mark.parametrize('is_async', [pytest.param(False, id='sync'), pytest.param(True, id='async')])
async def test_sub_handlers_scope_is_visible_to_the_handler(settings: OperatorSettings, is_async: bool) -> None:
    scope = FakeScope(subrefs=())
    seen: List[Any] = []

    def sync_fn(**_: Any) -> None:
        seen.append(execution.subexecution_var.get())

    async def async_fn(**_: Any) -> None:
        seen.append(execution.subexecution_var.get())

    await execute(context_with(settings, scope), make_handler(async_fn if is_async else sync_fn))
    assert seen == [scope]
    assert scope.finished
    assert execution.subexecution_var.get(None) is None


async def test_finished_sub_handlers_are_reported_with_the_success(settings: OperatorSettings) -> None:
    scope = FakeScope(subrefs=('fn/a', 'fn/b'))
    outcome = await execute(context_with(settings, scope), make_handler(lambda **_: None))
    assert outcome.final
    assert set(outcome.subrefs) == {'fn/a', 'fn/b'}


async def test_unfinished_sub_handlers_retry_the_parent_quietly(
        caplog: pytest.LogCaptureFixture, settings: OperatorSettings) -> None:
    exc = HandlerChildrenRetry(None, delay=5)
    scope = FakeScope(subrefs=('fn/a',), exc=exc)
    outcome = await execute(context_with(settings, scope), make_handler(lambda **_: None))
    assert outcome == HandlerOutcome(final=False, exception=exc, delay=5, subrefs=('fn/a',))
    assert messages(caplog)[1:] == [('DEBUG', "Handler 'fn' has unfinished sub-handlers. Will retry soon.")]


# Execution rounds.

async def test_only_awakened_handlers_are_executed_in_order(context: ExecutionContext) -> None:
    calls: List[str] = []

    def track(name: str) -> Callable[..., None]:
        return lambda **_: calls.append(name)

    handlers = [make_handler(track('done'), id='done'), make_handler(track('sleeping'), id='sleeping'),
                make_handler(track('due'), id='due'), make_handler(track('new'), id='new'),
                make_handler(track('failed'), id='failed')]
    states: Dict[HandlerId, HandlerState] = {
        HandlerId('done'): HandlerState(started=NOW, success=True),
        HandlerId('failed'): HandlerState(started=NOW, failure=True),
        HandlerId('sleeping'): HandlerState(started=NOW, delayed=NOW + datetime.timedelta(seconds=1)),
        HandlerId('due'): HandlerState(started=NOW, delayed=NOW),
    }
    context = dataclasses.replace(context, lifecycle=lifecycles.all_at_once)
    outcomes = await execute_handlers_once(handlers_=handlers, state=State(states), context=context)
    assert calls == ['due', 'new']
    assert list(outcomes) == ['due', 'new']


async def test_the_default_lifecycle_runs_one_due_handler_per_round(context: ExecutionContext) -> None:
    calls: List[str] = []
    handlers = [make_handler(lambda **_: calls.append('a'), id='a'),
                make_handler(lambda **_: calls.append('b'), id='b')]
    outcomes = await execute_handlers_once(handlers_=handlers, state=State({}), context=context)
    assert calls == ['a']
    assert list(outcomes) == ['a']
