"""
Handlers wrapped with ``functools.wraps`` are registered and called, for every kind of handler.

A wrapper copies the wrapped function's name and signature (``__wrapped__``),
but the wrapper is what the framework calls: e.g. ``async def _wrapper(**_)``
around ``def reconcile(spec, name)``. Kopf registers such handlers; so do we,
without a warning, and the wrapper gets all the kwargs.
"""
import functools
from typing import Any, Callable, Dict, List

import pytest

import kopf
from kopf import on
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.actions.invocation import invoke
from kopf._core.engines import activities
from kopf._core.intents.handlers import Activity, BaseHandler
from kopf._core.intents.registries import OperatorRegistry

CALLS: List[Dict[str, Any]] = []


def reconcile(spec: Any, name: Any) -> None:
    """A function with named parameters only: the wrappers below give it what it needs."""


def wrap_async(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def _wrapper(**kwargs: Any) -> None:
        CALLS.append(kwargs)
    return _wrapper


def wrap_sync(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def _wrapper(**kwargs: Any) -> None:
        CALLS.append(kwargs)
    return _wrapper


DECORATORS = [
    pytest.param('_activities', lambda r: on.startup(registry=r), id='startup'),
    pytest.param('_activities', lambda r: on.cleanup(registry=r), id='cleanup'),
    pytest.param('_activities', lambda r: on.login(registry=r), id='login'),
    pytest.param('_activities', lambda r: on.probe(registry=r), id='probe'),
    pytest.param('_watching', lambda r: on.event('kopfexamples', registry=r), id='event'),
    pytest.param('_changing', lambda r: on.resume('kopfexamples', registry=r), id='resume'),
    pytest.param('_changing', lambda r: on.create('kopfexamples', registry=r), id='create'),
    pytest.param('_changing', lambda r: on.update('kopfexamples', registry=r), id='update'),
    pytest.param('_changing', lambda r: on.delete('kopfexamples', registry=r), id='delete'),
    pytest.param('_changing', lambda r: on.field('kopfexamples', field='spec.x', registry=r), id='field'),
    pytest.param('_spawning', lambda r: on.daemon('kopfexamples', registry=r), id='daemon'),
    pytest.param('_spawning', lambda r: on.timer('kopfexamples', interval=1, registry=r), id='timer'),
    pytest.param('_indexing', lambda r: on.index('kopfexamples', registry=r), id='index'),
    pytest.param('_webhooks', lambda r: on.validate('kopfexamples', registry=r), id='validate'),
    pytest.param('_webhooks', lambda r: on.mutate('kopfexamples', registry=r), id='mutate'),
]


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


@pytest.mark.parametrize('wrap', [wrap_async, wrap_sync])
@pytest.mark.parametrize('kind, decorator', DECORATORS)
async def test_wrapped_handlers_are_registered_and_invoked_with_the_kwargs(
        kind: str, decorator: Callable[[OperatorRegistry], Any], wrap: Callable[..., Any],
        caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()
    wrapper = wrap(reconcile)
    decorator(registry)(wrapper)
    assert caplog.records == []  # the wrapper accepts **kwargs: nothing to warn about

    handlers_: List[BaseHandler] = list(getattr(registry, kind).get_all_handlers())
    assert [handler.fn for handler in handlers_] == [wrapper]
    assert handlers_[0].id.split('/')[0] == 'reconcile'  # named after the wrapped function, as in Kopf

    kwargs = {'spec': {'x': 1}, 'name': 'kex1', 'logger': None, 'retry': 0, 'brand_new_kwarg': 'yes'}
    await invoke(handlers_[0].fn, kwargs=kwargs, settings=OperatorSettings())
    assert CALLS == [kwargs]


@pytest.mark.parametrize('wrap', [wrap_async, wrap_sync])
async def test_wrapped_startup_handlers_run_in_the_operators_activity(wrap: Callable[..., Any]) -> None:
    registry = OperatorRegistry()
    kopf.on.startup(registry=registry)(wrap(reconcile))
    memo = kopf.Memo()
    await activities.run_activity(activity=Activity.STARTUP, registry=registry, settings=OperatorSettings(),
                                  memo=memo, extra_kwargs={'idx': 'an index'})
    assert len(CALLS) == 1
    assert CALLS[0]['memo'] is memo
    assert CALLS[0]['idx'] == 'an index'
    assert {'logger', 'settings', 'retry', 'started', 'runtime'} <= set(CALLS[0])


def test_the_wrapped_functions_own_signature_is_still_judged(caplog: pytest.LogCaptureFixture) -> None:
    # A wrapper that does not take **kwargs itself is what would fail on a new kwarg: warned about.
    def outer(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def _wrapper(spec: Any) -> None:
            pass
        return _wrapper

    def with_kwargs(**_: Any) -> None:
        pass

    registry = OperatorRegistry()
    on.create('kopfexamples', registry=registry)(outer(with_kwargs))
    assert len(registry._changing.get_all_handlers()) == 1
    assert 'does not accept arbitrary keyword arguments' in caplog.text
