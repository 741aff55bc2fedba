"""
The metrics of the handlers' runs: one run counted per invocation, by its outcome, with its duration.

Inputs: real handlers invoked by ``execute_handler_once``; the process's own
metrics, read as differences (each test uses handler ids of its own). Nothing is mocked.
"""
import datetime
import logging
from typing import Any, Callable, Optional

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import instruments
from kopf._cogs.structs import references
from kopf._core.actions.errors import HandlerChildrenRetry, PermanentError, TemporaryError
from kopf._core.actions.execution import ExecutionContext, execute_handler_once
from kopf._core.actions.progression import HandlerState
from kopf._core.intents.handlers import ChangingHandler, ErrorsMode, HandlerId

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples')
OUTCOMES = ('success', 'temporary_error', 'permanent_error', 'ignored_error', 'retry')


def raising(exc: BaseException) -> Callable[..., Any]:
    def fn(**_: Any) -> None:
        raise exc
    return fn


async def run(handler_id: str, fn: Callable[..., Any], *, errors: Optional[ErrorsMode] = None,
              retries: Optional[int] = None, resource: Optional[references.Resource] = RESOURCE) -> None:
    handler = ChangingHandler(fn=fn, id=HandlerId(handler_id), param=None, errors=errors, timeout=None,
                              retries=retries, backoff=None)
    kwargs = {} if resource is None else {'resource': resource}
    context = ExecutionContext(settings=OperatorSettings(), logger=logging.getLogger('kopf.objects'),
                               build_kwargs=lambda handler, state: dict(kwargs))
    state = HandlerState(started=datetime.datetime.now(datetime.timezone.utc))
    await execute_handler_once(handler=handler, state=state, context=context)


def counts(handler_id: str, resource: str = 'kopfexamples.kopf.dev') -> dict[str, float]:
    values = {outcome: instruments.HANDLER_RUNS.value((handler_id, resource, outcome)) for outcome in OUTCOMES}
    return {outcome: value for outcome, value in values.items() if value}


@pytest.mark.parametrize('fn, errors, outcome', [
    pytest.param(lambda **_: None, None, 'success', id='success'),
    pytest.param(raising(TemporaryError("later", delay=1)), None, 'temporary_error', id='temporary'),
    pytest.param(raising(ValueError("boo")), None, 'temporary_error', id='arbitrary-temporary'),
    pytest.param(raising(PermanentError("never")), None, 'permanent_error', id='permanent'),
    pytest.param(raising(ValueError("boo")), ErrorsMode.PERMANENT, 'permanent_error', id='arbitrary-permanent'),
    pytest.param(raising(ValueError("boo")), ErrorsMode.IGNORED, 'ignored_error', id='arbitrary-ignored'),
    pytest.param(raising(HandlerChildrenRetry(delay=1)), None, 'retry', id='children-retry'),
])
async def test_each_run_is_counted_by_its_outcome(request: pytest.FixtureRequest, fn: Callable[..., Any],
                                                  errors: Optional[ErrorsMode], outcome: str) -> None:
    handler_id = f'fn-{request.node.callspec.id}'
    await run(handler_id, fn, errors=errors)
    await run(handler_id, fn, errors=errors)
    assert counts(handler_id) == {outcome: 2}
    assert instruments.HANDLER_DURATION.count((handler_id, 'kopfexamples.kopf.dev')) == 2


async def test_the_last_allowed_retry_fails_permanently() -> None:
    await run('fn-last-retry', raising(TemporaryError("later", delay=1)), retries=1)
    assert counts('fn-last-retry') == {'permanent_error': 1}


async def test_the_activities_have_no_resource() -> None:
    await run('fn-activity', lambda **_: None, resource=None)
    assert counts('fn-activity', resource='') == {'success': 1}
