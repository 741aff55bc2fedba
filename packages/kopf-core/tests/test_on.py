"""
The public decorators: what they register, with which options, and what they refuse.

Each test uses its own registry (explicitly or as the default one), so the
process-wide default registry is never polluted.
"""
from typing import Any, Callable, Iterator

import pytest

from kopf import on
from kopf._cogs.structs.references import EVERYTHING, Resource, Selector
from kopf._core.actions.invocation import HandlerSignatureError
from kopf._core.intents.causes import Reason
from kopf._core.intents.filters import PRESENT
from kopf._core.intents.handlers import (
    Activity,
    ActivityHandler,
    ChangingHandler,
    DaemonHandler,
    ErrorsMode,
    IndexingHandler,
    TimerHandler,
    WatchingHandler,
)
from kopf._core.intents.registries import OperatorRegistry, get_default_registry, set_default_registry

KOPFEXAMPLES = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)


@pytest.fixture()
def registry() -> Iterator[OperatorRegistry]:
    """A fresh registry, also installed as the default one for the duration of the test."""
    original = get_default_registry()
    registry = OperatorRegistry()
    set_default_registry(registry)
    yield registry
    set_default_registry(original)


def fn(**_: Any) -> None:
    pass


def all_handlers(registry: OperatorRegistry) -> list[Any]:
    return [*registry._activities.get_all_handlers(), *registry._watching.get_all_handlers(),
            *registry._changing.get_all_handlers(), *registry._spawning.get_all_handlers(),
            *registry._indexing.get_all_handlers()]


# What is registered.

@pytest.mark.parametrize('decorator, activity', [
    pytest.param(on.startup, Activity.STARTUP, id='startup'),
    pytest.param(on.cleanup, Activity.CLEANUP, id='cleanup'),
    pytest.param(on.login, Activity.AUTHENTICATION, id='login'),
    pytest.param(on.probe, Activity.PROBE, id='probe'),
])
def test_activity_decorators(registry: OperatorRegistry, decorator: Callable[..., Any], activity: Activity) -> None:
    decorator()(fn)
    handlers = registry.get_activity_handlers(activity=activity)
    assert len(handlers) == 1
    assert isinstance(handlers[0], ActivityHandler)
    assert handlers[0].fn is fn
    assert handlers[0].id == 'fn'


def test_event_decorator(registry: OperatorRegistry) -> None:
    on.event('kopfexamples')(fn)
    handlers = registry.get_watching_handlers(resource=KOPFEXAMPLES)
    assert [type(h) for h in handlers] == [WatchingHandler]
    assert handlers[0].selector == Selector('kopfexamples')


@pytest.mark.parametrize('decorator, reason, initial', [
    pytest.param(on.create, Reason.CREATE, None, id='create'),
    pytest.param(on.update, Reason.UPDATE, None, id='update'),
    pytest.param(on.delete, Reason.DELETE, None, id='delete'),
    pytest.param(on.resume, None, True, id='resume'),
])
def test_changing_decorators(registry: OperatorRegistry, decorator: Callable[..., Any],
                             reason: Any, initial: Any) -> None:
    decorator('kopfexamples')(fn)
    handlers = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert [type(h) for h in handlers] == [ChangingHandler]
    assert handlers[0].reason == reason
    assert handlers[0].initial == initial
    assert handlers[0].id == 'fn'


def test_field_decorator_registers_a_field_handler_of_updates(registry: OperatorRegistry) -> None:
    on.field('kopfexamples', field='spec.field')(fn)
    [handler] = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert handler.reason is None
    assert handler.field == ('spec', 'field')
    assert handler.field_needs_change
    assert handler.id == 'fn/spec.field'


def test_update_with_a_field_gets_a_field_specific_id(registry: OperatorRegistry) -> None:
    on.update('kopfexamples', field=['spec', 'items'])(fn)
    [handler] = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert handler.id == 'fn/spec.items'
    assert handler.field_needs_change


def test_deletion_handlers_require_the_finalizer_by_default(registry: OperatorRegistry) -> None:
    on.delete('kopfexamples')(fn)
    [handler] = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert handler.requires_finalizer


def test_optional_deletion_handlers_do_not_require_the_finalizer(registry: OperatorRegistry) -> None:
    on.delete('kopfexamples', optional=True)(fn)
    [handler] = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert not handler.requires_finalizer


def test_resume_handlers_remember_deleted_true(registry: OperatorRegistry) -> None:
    on.resume('kopfexamples', deleted=True)(fn)
    [handler] = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert handler.deleted is True


def test_daemon_decorator(registry: OperatorRegistry) -> None:
    on.daemon('kopfexamples', initial_delay=1, cancellation_backoff=2, cancellation_timeout=3,
              cancellation_polling=4)(fn)
    [handler] = registry.get_spawning_handlers(resource=KOPFEXAMPLES)
    assert isinstance(handler, DaemonHandler)
    assert (handler.initial_delay, handler.cancellation_backoff, handler.cancellation_timeout,
            handler.cancellation_polling) == (1, 2, 3, 4)
    assert handler.requires_finalizer


def test_timer_decorator(registry: OperatorRegistry) -> None:
    on.timer('kopfexamples', interval=10, idle=5, initial_delay=1, sharp=True)(fn)
    [handler] = registry.get_spawning_handlers(resource=KOPFEXAMPLES)
    assert isinstance(handler, TimerHandler)
    assert (handler.interval, handler.idle, handler.initial_delay, handler.sharp) == (10, 5, 1, True)


def test_timer_without_interval_or_idle_is_accepted(registry: OperatorRegistry) -> None:
    on.timer('kopfexamples')(fn)  # as in Kopf 1.45.2: it runs once per object
    [handler] = registry.get_spawning_handlers(resource=KOPFEXAMPLES)
    assert isinstance(handler, TimerHandler)
    assert (handler.interval, handler.idle) == (None, None)


def test_index_decorator(registry: OperatorRegistry) -> None:
    on.index('kopfexamples', id='by_name')(fn)
    [handler] = registry.get_indexing_handlers(resource=KOPFEXAMPLES)
    assert isinstance(handler, IndexingHandler)
    assert registry.index_names == ['by_name']


def test_options_are_passed_to_the_handler(registry: OperatorRegistry) -> None:
    def when(**_: Any) -> bool:
        return True

    on.create('kopf.dev', 'v1', 'kopfexamples', id='my-id', param=123, errors=ErrorsMode.PERMANENT, timeout=60,
              retries=3, backoff=5, labels={'app': 'x'}, annotations={'a': PRESENT}, when=when,
              field='spec.field', value='x')(fn)
    [handler] = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert handler.id == 'my-id/spec.field'
    assert handler.param == 123
    assert handler.errors == ErrorsMode.PERMANENT
    assert (handler.timeout, handler.retries, handler.backoff) == (60, 3, 5)
    assert handler.labels == {'app': 'x'}
    assert handler.annotations == {'a': PRESENT}
    assert handler.when is when
    assert handler.field == ('spec', 'field')
    assert handler.value == 'x'
    assert handler.selector == Selector('kopf.dev', 'v1', 'kopfexamples')


def test_old_and_new_are_passed_to_update_handlers(registry: OperatorRegistry) -> None:
    on.update('kopfexamples', field='spec.field', old='x', new='y')(fn)
    [handler] = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert (handler.old, handler.new) == ('x', 'y')


@pytest.mark.parametrize('kwargs, expected', [
    pytest.param({'kind': 'KopfExample'}, Selector(kind='KopfExample'), id='kind'),
    pytest.param({'plural': 'kopfexamples'}, Selector(plural='kopfexamples'), id='plural'),
    pytest.param({'singular': 'kopfexample'}, Selector(singular='kopfexample'), id='singular'),
    pytest.param({'shortcut': 'kex'}, Selector(shortcut='kex'), id='shortcut'),
    pytest.param({'category': 'all'}, Selector(category='all'), id='category'),
])
def test_resource_kwargs_make_the_selector(registry: OperatorRegistry, kwargs: Any, expected: Selector) -> None:
    on.event(**kwargs)(fn)
    assert registry.selectors == [expected]


def test_everything_marker_makes_the_selector(registry: OperatorRegistry) -> None:
    on.event('kopf.dev', EVERYTHING)(fn)
    assert registry.selectors == [Selector('kopf.dev', EVERYTHING)]


def test_decorated_function_is_returned_unchanged(registry: OperatorRegistry) -> None:
    assert on.create('kopfexamples')(fn) is fn


def test_same_function_decorated_twice_identically_is_registered_once(registry: OperatorRegistry) -> None:
    on.create('kopfexamples')(on.create('kopfexamples')(fn))
    assert len(registry.get_changing_handlers(resource=KOPFEXAMPLES)) == 1


# Registries.

def test_handlers_go_to_the_default_registry(registry: OperatorRegistry) -> None:
    on.create('kopfexamples')(fn)
    assert [h.fn for h in get_default_registry().get_changing_handlers(resource=KOPFEXAMPLES)] == [fn]


@pytest.mark.parametrize('decorator', [
    pytest.param(lambda r: on.startup(registry=r), id='startup'),
    pytest.param(lambda r: on.event('kopfexamples', registry=r), id='event'),
    pytest.param(lambda r: on.create('kopfexamples', registry=r), id='create'),
    pytest.param(lambda r: on.field('kopfexamples', field='spec.x', registry=r), id='field'),
    pytest.param(lambda r: on.daemon('kopfexamples', registry=r), id='daemon'),
    pytest.param(lambda r: on.timer('kopfexamples', interval=1, registry=r), id='timer'),
    pytest.param(lambda r: on.index('kopfexamples', registry=r), id='index'),
])
def test_explicit_registry_is_used_instead_of_the_default_one(
        registry: OperatorRegistry, decorator: Callable[[OperatorRegistry], Any]) -> None:
    explicit = OperatorRegistry()
    decorator(explicit)(fn)
    assert len(all_handlers(explicit)) == 1
    assert all_handlers(registry) == []


# What is refused (and what is not).

@pytest.mark.parametrize('decorator', [
    pytest.param(on.startup(), id='startup'),
    pytest.param(on.login(), id='login'),
    pytest.param(on.event('kopfexamples'), id='event'),
    pytest.param(on.resume('kopfexamples'), id='resume'),
    pytest.param(on.create('kopfexamples'), id='create'),
    pytest.param(on.update('kopfexamples'), id='update'),
    pytest.param(on.delete('kopfexamples'), id='delete'),
    pytest.param(on.field('kopfexamples', field='spec.x'), id='field'),
    pytest.param(on.daemon('kopfexamples'), id='daemon'),
    pytest.param(on.timer('kopfexamples', interval=1), id='timer'),
    pytest.param(on.index('kopfexamples'), id='index'),
])
def test_handler_without_kwargs_is_registered_with_a_warning(
        registry: OperatorRegistry, decorator: Callable[[Any], Any], caplog: pytest.LogCaptureFixture) -> None:
    # Kopf registers any callable; e.g. a function that names every kwarg it gets works there.
    def no_kwargs(spec: Any) -> None:
        pass

    decorator(no_kwargs)
    assert [handler.fn for handler in all_handlers(registry)] == [no_kwargs]
    assert "no_kwargs(spec: Any) -> None does not accept arbitrary keyword arguments: add **kwargs" in caplog.text


def test_signature_error_is_a_type_error() -> None:
    assert issubclass(HandlerSignatureError, TypeError)


@pytest.mark.parametrize('decorator', [on.update, on.field])
@pytest.mark.parametrize('kwargs', [
    pytest.param({'old': 'x'}, id='old'),
    pytest.param({'new': 'x'}, id='new'),
    pytest.param({'old': 'x', 'new': 'y'}, id='both'),
])
def test_value_with_old_or_new_is_refused(decorator: Callable[..., Any], kwargs: Any) -> None:
    with pytest.raises(TypeError, match=r"Either value= or old=/new="):
        decorator('kopfexamples', field='spec.field', value='x', **kwargs)


@pytest.mark.parametrize('kwargs', [
    pytest.param({'value': 'x'}, id='value'),
    pytest.param({'old': 'x'}, id='old'),
    pytest.param({'new': 'x'}, id='new'),
])
def test_value_filters_without_a_field_are_refused(kwargs: Any) -> None:
    with pytest.raises(TypeError, match=r"need a field="):
        on.update('kopfexamples', **kwargs)


def test_ambiguous_resource_specification_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Ambiguous resource specification"):
        on.create('kopfexamples', kind='KopfExample')


def test_missing_resource_specification_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Unspecific resource"):
        on.create()
