"""
Registries: registration with deduplication, and the selection of handlers for objects and causes.

Handlers are constructed directly (the decorators are specified separately);
bodies are plain dicts as the engine passes them; the filter kwargs are a
small stand-in for the handlers' kwargs.
"""
import logging
from typing import Any, Callable, Iterator, List, Optional

import pytest

from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.diffs import Diff, diff
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource, Selector
from kopf._core.intents import registries
from kopf._core.intents.causes import ChangingCause, Reason
from kopf._core.intents.filters import ABSENT, PRESENT
from kopf._core.intents.handlers import (
    ActivityHandler,
    ChangingHandler,
    DaemonHandler,
    HandlerId,
    IndexingHandler,
    ResourceHandler,
    TimerHandler,
    WatchingHandler,
    build_handler_id,
)
from kopf._core.intents.matching import (
    is_in_scope,
    match_resource_filters,
    requires_finalizer,
    select_changing_handlers,
)
from kopf._core.intents.registries import OperatorRegistry, get_default_registry, set_default_registry

KOPFEXAMPLES = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
PODS = Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
KWARGS = {'name': 'kex1'}


def fn(**_: Any) -> None:
    pass


def fn2(**_: Any) -> None:
    pass


def make(cls: Any = ChangingHandler, *, fn: Callable[..., Any] = fn, id: Optional[str] = None,
         field: Optional[tuple[str, ...]] = None, selector: Optional[Selector] = None, **kwargs: Any) -> Any:
    return cls(fn=fn, id=build_handler_id(fn, id, field), param=kwargs.pop('param', None), errors=None,
               timeout=None, retries=None, backoff=None, field=field,
               selector=selector if selector is not None else Selector('kopfexamples'), **kwargs)


def make_cause(reason: Reason, *, initial: bool = False, old: Any = None, new: Any = None) -> ChangingCause:
    body = Body({'metadata': {'name': 'kex1'}, **(new or {})})
    return ChangingCause(resource=KOPFEXAMPLES, body=body, patch=Patch(), memo=None, logger=logging.getLogger('test'),
                         reason=reason, initial=initial, old=old, new=new, diff=diff(old, new))


@pytest.fixture()
def registry() -> OperatorRegistry:
    return OperatorRegistry()


# Registration and deduplication.

def test_same_handler_registered_twice_is_kept_once(registry: OperatorRegistry) -> None:
    registry.register_changing(make(reason=Reason.CREATE))
    registry.register_changing(make(reason=Reason.CREATE))
    assert len(registry.get_changing_handlers(resource=KOPFEXAMPLES)) == 1


def test_same_function_for_several_resources_is_selected_per_resource(registry: OperatorRegistry) -> None:
    registry.register_changing(make(reason=Reason.CREATE, selector=Selector('kopfexamples')))
    registry.register_changing(make(reason=Reason.CREATE, selector=Selector('pods')))
    assert [h.selector for h in registry.get_changing_handlers(resource=KOPFEXAMPLES)] == [Selector('kopfexamples')]
    assert [h.selector for h in registry.get_changing_handlers(resource=PODS)] == [Selector('pods')]


def test_overlapping_selectors_of_the_same_function_are_invoked_once(registry: OperatorRegistry) -> None:
    registry.register_changing(make(reason=Reason.CREATE, selector=Selector('kopfexamples')))
    registry.register_changing(make(reason=Reason.CREATE, selector=Selector(kind='KopfExample')))
    handlers = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    selected = select_changing_handlers(handlers, cause=make_cause(Reason.CREATE, new={}), kwargs=KWARGS)
    assert len(selected) == 1


def test_resume_and_create_on_one_function_are_invoked_once_for_an_initial_creation(
        registry: OperatorRegistry) -> None:
    registry.register_changing(make(initial=True))
    registry.register_changing(make(reason=Reason.CREATE))
    handlers = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    cause = make_cause(Reason.CREATE, initial=True, new={'spec': {}})
    assert [h.fn for h in select_changing_handlers(handlers, cause=cause, kwargs=KWARGS)] == [fn]


@pytest.mark.parametrize('reason, initial', [
    pytest.param(Reason.RESUME, True, id='resume'),
    pytest.param(Reason.CREATE, False, id='create'),
])
def test_resume_and_create_on_one_function_are_invoked_once_per_cause(
        registry: OperatorRegistry, reason: Reason, initial: bool) -> None:
    registry.register_changing(make(initial=True))
    registry.register_changing(make(reason=Reason.CREATE))
    handlers = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    cause = make_cause(reason, initial=initial, old={'spec': {}} if reason == Reason.RESUME else None,
                       new={'spec': {}})
    assert len(select_changing_handlers(handlers, cause=cause, kwargs=KWARGS)) == 1


def test_different_fields_of_one_function_are_invoked_separately(registry: OperatorRegistry) -> None:
    registry.register_changing(make(reason=Reason.UPDATE, field=('spec', 'field'), field_needs_change=True))
    registry.register_changing(make(reason=Reason.UPDATE, field=('spec',), field_needs_change=True))
    handlers = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    cause = make_cause(Reason.UPDATE, old={'spec': {'field': 'a'}}, new={'spec': {'field': 'b'}})
    selected = select_changing_handlers(handlers, cause=cause, kwargs=KWARGS)
    assert [h.id for h in selected] == ['fn/spec.field', 'fn/spec']


def test_selected_handlers_keep_the_order_of_declaration(registry: OperatorRegistry) -> None:
    registry.register_changing(make(fn=fn2, reason=Reason.CREATE))
    registry.register_changing(make(fn=fn, reason=Reason.CREATE))
    handlers = registry.get_changing_handlers(resource=KOPFEXAMPLES)
    selected = select_changing_handlers(handlers, cause=make_cause(Reason.CREATE, new={}), kwargs=KWARGS)
    assert [h.fn for h in selected] == [fn2, fn]


def test_handlers_of_other_resources_are_not_served(registry: OperatorRegistry) -> None:
    registry.register_changing(make(reason=Reason.CREATE, selector=Selector('pods')))
    registry.register_watching(make(WatchingHandler, selector=Selector('pods')))
    registry.register_spawning(make(DaemonHandler, selector=Selector('pods')))
    assert not registry.get_changing_handlers(resource=KOPFEXAMPLES)
    assert not registry.get_watching_handlers(resource=KOPFEXAMPLES)
    assert not registry.get_spawning_handlers(resource=KOPFEXAMPLES)
    assert not registry.has_state_handlers(resource=KOPFEXAMPLES)


def test_activities_are_selected_by_their_kind(registry: OperatorRegistry) -> None:
    from kopf._core.intents.handlers import Activity
    startup = ActivityHandler(fn=fn, id=HandlerId('fn'), param=None, errors=None, timeout=None, retries=None,
                              backoff=None, activity=Activity.STARTUP)
    registry.register_activity(startup)
    assert registry.get_activity_handlers(activity=Activity.STARTUP) == [startup]
    assert registry.get_activity_handlers(activity=Activity.CLEANUP) == []
    assert registry.has_activity_handlers(activity=Activity.STARTUP)
    assert not registry.has_activity_handlers(activity=Activity.CLEANUP)


def test_selectors_are_listed_once_in_the_order_of_declaration(registry: OperatorRegistry) -> None:
    registry.register_changing(make(reason=Reason.CREATE, selector=Selector('pods')))
    registry.register_changing(make(fn=fn2, reason=Reason.CREATE, selector=Selector('kopfexamples')))
    registry.register_changing(make(reason=Reason.UPDATE, selector=Selector('pods')))
    assert registry.selectors == [Selector('pods'), Selector('kopfexamples')]


def test_index_names_must_be_unique_across_functions(registry: OperatorRegistry) -> None:
    registry.register_indexing(make(IndexingHandler, fn=fn, id='idx'))
    with pytest.raises(ValueError, match=r"The index 'idx' is already declared"):
        registry.register_indexing(make(IndexingHandler, fn=fn2, id='idx'))


def test_index_of_one_function_for_several_resources_is_one_index(registry: OperatorRegistry) -> None:
    registry.register_indexing(make(IndexingHandler, id='idx', selector=Selector('pods')))
    registry.register_indexing(make(IndexingHandler, id='idx', selector=Selector('kopfexamples')))
    assert registry.index_names == ['idx']


def test_extra_fields_of_field_handlers_are_reported(registry: OperatorRegistry) -> None:
    registry.register_changing(make(reason=Reason.UPDATE, field=('status', 'phase')))
    registry.register_changing(make(fn=fn2, reason=Reason.CREATE))
    assert list(registry.get_extra_fields(resource=KOPFEXAMPLES)) == [('status', 'phase')]


def test_handlers_registered_after_a_lookup_are_served_from_then_on(registry: OperatorRegistry) -> None:
    # The answers are remembered per resource (asked at every cycle), but not beyond a registration.
    assert not registry.has_state_handlers(resource=KOPFEXAMPLES)
    registry.register_changing(first := make(reason=Reason.UPDATE, field=('spec', 'x')))
    assert list(registry.get_changing_handlers(resource=KOPFEXAMPLES)) == [first]
    assert list(registry.get_extra_fields(resource=KOPFEXAMPLES)) == [('spec', 'x')]
    registry.register_watching(watching := make(WatchingHandler))
    registry.register_spawning(daemon := make(DaemonHandler, fn=fn2))
    registry.register_changing(second := make(fn=fn2, reason=Reason.UPDATE, field=('spec', 'y')))
    assert list(registry.get_changing_handlers(resource=KOPFEXAMPLES)) == [first, second]
    assert list(registry.get_extra_fields(resource=KOPFEXAMPLES)) == [('spec', 'x'), ('spec', 'y')]
    assert list(registry.get_watching_handlers(resource=KOPFEXAMPLES)) == [watching]
    assert list(registry.get_spawning_handlers(resource=KOPFEXAMPLES)) == [daemon]
    assert not registry.get_changing_handlers(resource=PODS)


# Finalizers.

@pytest.mark.parametrize('handler', [
    pytest.param(make(reason=Reason.DELETE, requires_finalizer=True), id='deletion'),
    pytest.param(make(DaemonHandler), id='daemon'),
    pytest.param(make(TimerHandler, interval=1), id='timer'),
])
def test_finalizer_is_required_by_non_optional_deletion_handlers_daemons_and_timers(handler: ResourceHandler) -> None:
    assert requires_finalizer([handler], body={}, kwargs=KWARGS)


@pytest.mark.parametrize('handler', [
    pytest.param(make(reason=Reason.DELETE, requires_finalizer=False), id='optional-deletion'),
    pytest.param(make(reason=Reason.CREATE), id='creation'),
    pytest.param(make(reason=Reason.UPDATE), id='update'),
    pytest.param(make(initial=True, deleted=True), id='resume-even-for-deleted'),
    pytest.param(make(WatchingHandler), id='watching'),
])
def test_finalizer_is_not_required_by_other_handlers(handler: ResourceHandler) -> None:
    assert not requires_finalizer([handler], body={}, kwargs=KWARGS)


@pytest.mark.parametrize('handler', [
    pytest.param(make(reason=Reason.DELETE, requires_finalizer=True, labels={'app': 'x'}), id='labels'),
    pytest.param(make(reason=Reason.DELETE, requires_finalizer=True, annotations={'a': PRESENT}), id='annotations'),
    pytest.param(make(reason=Reason.DELETE, requires_finalizer=True, when=lambda **_: False), id='when'),
    pytest.param(make(reason=Reason.DELETE, requires_finalizer=True, field=('spec', 'x')), id='field'),
    pytest.param(make(DaemonHandler, labels={'app': 'x'}), id='daemon-labels'),
])
def test_finalizer_is_not_required_by_handlers_whose_filters_do_not_match(handler: ResourceHandler) -> None:
    body = {'metadata': {'labels': {'app': 'y'}}, 'spec': {}}
    assert not requires_finalizer([handler], body=body, kwargs=KWARGS)


def test_finalizer_is_required_if_any_handler_requires_it() -> None:
    handlers = [make(reason=Reason.DELETE, requires_finalizer=False), make(fn=fn2, reason=Reason.DELETE,
                                                                            requires_finalizer=True)]
    assert requires_finalizer(handlers, body={}, kwargs=KWARGS)


# Stealth mode.

def test_object_matching_any_handler_is_in_scope() -> None:
    handlers = [make(labels={'app': 'other'}), make(fn=fn2, labels={'app': 'x'})]
    assert is_in_scope(handlers, body={'metadata': {'labels': {'app': 'x'}}}, kwargs=KWARGS)


@pytest.mark.parametrize('handler', [
    pytest.param(make(labels={'app': 'other'}), id='labels'),
    pytest.param(make(annotations={'note': ABSENT}), id='annotations'),
    pytest.param(make(when=lambda **_: False), id='when'),
])
def test_object_matching_no_handlers_is_out_of_scope(handler: ResourceHandler) -> None:
    body = {'metadata': {'labels': {'app': 'x'}, 'annotations': {'note': ''}}}
    assert not is_in_scope([handler], body=body, kwargs=KWARGS)


def test_object_is_out_of_scope_if_there_are_no_handlers() -> None:
    assert not is_in_scope([], body={}, kwargs=KWARGS)


def test_field_handler_of_a_nonexistent_field_keeps_every_object_in_scope() -> None:
    handler = make(reason=None, field=('spec', 'nonexistent'), field_needs_change=True)
    assert is_in_scope([handler], body={'spec': {}}, kwargs=KWARGS)


@pytest.mark.parametrize('reason', [Reason.CREATE, Reason.DELETE])
@pytest.mark.parametrize('value, spec, expected', [
    pytest.param('ready', {'phase': 'ready'}, True, id='value-matches'),
    pytest.param('ready', {'phase': 'pending'}, False, id='value-differs'),
    pytest.param(None, {'phase': 'pending'}, True, id='present'),
    pytest.param(None, {}, False, id='absent'),
    pytest.param(ABSENT, {}, True, id='absent-expected'),
])
def test_field_filters_of_non_update_handlers_check_the_current_state(
        reason: Reason, value: Any, spec: Any, expected: bool) -> None:
    # An object starts matching such a handler when its spec changes: a creation for it (stealth mode).
    handler = make(reason=reason, field=('spec', 'phase'), value=value)
    assert is_in_scope([handler], body={'spec': spec}, kwargs=KWARGS) is expected


def test_field_filters_of_daemons_check_the_current_state() -> None:
    handler = make(DaemonHandler, field=('spec', 'phase'), value='ready')
    assert not is_in_scope([handler], body={'spec': {'phase': 'pending'}}, kwargs=KWARGS)
    assert is_in_scope([handler], body={'spec': {'phase': 'ready'}}, kwargs=KWARGS)


def test_when_filter_gets_the_kwargs() -> None:
    calls: List[Any] = []

    def when(**kwargs: Any) -> bool:
        calls.append(kwargs)
        return True

    handler = make(when=when)
    assert is_in_scope([handler], body={}, kwargs=KWARGS)
    assert calls == [KWARGS]


# Filters of the current state (no diff).

@pytest.mark.parametrize('value, body, expected', [
    pytest.param(None, {'spec': {'field': 'x'}}, True, id='implied-present-matches'),
    pytest.param(None, {'spec': {}}, False, id='implied-present-mismatches'),
    pytest.param('x', {'spec': {'field': 'x'}}, True, id='literal-matches'),
    pytest.param('x', {'spec': {'field': 'y'}}, False, id='literal-mismatches'),
    pytest.param(ABSENT, {'spec': {}}, True, id='absent-matches'),
    pytest.param(ABSENT, {'spec': {'field': 'x'}}, False, id='absent-mismatches'),
])
def test_field_and_value_check_the_current_state_without_a_diff(value: Any, body: Any, expected: bool) -> None:
    handler = make(reason=Reason.CREATE, field=('spec', 'field'), value=value)
    assert match_resource_filters(handler, body=body, kwargs=KWARGS) is expected


def test_value_callback_of_a_field_gets_none_when_absent() -> None:
    calls: List[Any] = []

    def check(value: Any, /, **kwargs: Any) -> bool:
        calls.append((value, kwargs))
        return True

    handler = make(reason=Reason.CREATE, field=('spec', 'field'), value=check)
    assert match_resource_filters(handler, body={'spec': {}}, kwargs=KWARGS)
    assert calls == [(None, KWARGS)]


# Filters of update diffs.

def update_matches(handler: ResourceHandler, old: Any, new: Any) -> bool:
    return match_resource_filters(handler, body=new, kwargs=KWARGS, diff=diff(old, new), old=old, new=new)


def update_handler(**kwargs: Any) -> Any:
    return make(reason=Reason.UPDATE, field=('spec', 'field'), field_needs_change=True, **kwargs)


@pytest.mark.parametrize('old, new', [
    pytest.param({'spec': {'field': 'a'}}, {'spec': {'field': 'b'}}, id='changed'),
    pytest.param({'spec': {}}, {'spec': {'field': 'b'}}, id='added'),
    pytest.param({'spec': {'field': 'a'}}, {'spec': {}}, id='removed'),
])
def test_field_is_matched_when_affected(old: Any, new: Any) -> None:
    assert update_matches(update_handler(), old, new)


@pytest.mark.parametrize('old, new', [
    pytest.param({'spec': {'field': 'a', 'other': 1}}, {'spec': {'field': 'a', 'other': 2}}, id='sibling-changed'),
    pytest.param({'spec': {'other': 1}}, {'spec': {'other': 2}}, id='absent-both-times'),
])
def test_field_is_not_matched_when_not_affected(old: Any, new: Any) -> None:
    assert not update_matches(update_handler(), old, new)


@pytest.mark.parametrize('old, new, expected', [
    pytest.param({'spec': {'field': 'a'}}, {'spec': {'field': 'x'}}, True, id='reached'),
    pytest.param({'spec': {'field': 'x'}}, {'spec': {'field': 'a'}}, True, id='lost'),
    pytest.param({'spec': {'field': 'a'}}, {'spec': {'field': 'b'}}, False, id='neither'),
    pytest.param({'spec': {'field': 'x', 'o': 1}}, {'spec': {'field': 'x', 'o': 2}}, False, id='kept-unaffected'),
])
def test_value_applies_to_either_side_of_the_change(old: Any, new: Any, expected: bool) -> None:
    assert update_matches(update_handler(value='x'), old, new) is expected


@pytest.mark.parametrize('criteria, old, new, expected', [
    pytest.param({'old': 'x', 'new': 'y'}, {'field': 'x'}, {'field': 'y'}, True, id='edited-exactly'),
    pytest.param({'old': 'x', 'new': 'y'}, {'field': 'y'}, {'field': 'x'}, False, id='edited-backwards'),
    pytest.param({'new': 'x'}, {'field': 'a'}, {'field': 'x'}, True, id='new-reached-by-edit'),
    pytest.param({'new': 'x'}, {}, {'field': 'x'}, True, id='new-reached-by-addition'),
    pytest.param({'new': 'x'}, {'field': 'x'}, {'field': 'a'}, False, id='new-lost'),
    pytest.param({'old': 'x'}, {'field': 'x'}, {'field': 'a'}, True, id='old-lost-by-edit'),
    pytest.param({'old': 'x'}, {'field': 'x'}, {}, True, id='old-lost-by-removal'),
    pytest.param({'old': 'x'}, {'field': 'a'}, {'field': 'x'}, False, id='old-reached'),
    pytest.param({'old': ABSENT, 'new': PRESENT}, {}, {'field': 'x'}, True, id='added'),
    pytest.param({'old': ABSENT, 'new': PRESENT}, {'field': 'a'}, {'field': 'x'}, False, id='added-but-changed'),
    pytest.param({'old': PRESENT, 'new': ABSENT}, {'field': 'x'}, {}, True, id='removed'),
    pytest.param({'old': PRESENT, 'new': ABSENT}, {}, {'field': 'x'}, False, id='removed-but-added'),
])
def test_old_and_new_apply_to_their_sides_only(criteria: Any, old: Any, new: Any, expected: bool) -> None:
    assert update_matches(update_handler(**criteria), {'spec': old}, {'spec': new}) is expected


def test_old_and_new_do_not_match_when_the_field_is_unchanged() -> None:
    handler = update_handler(old='x', new='x')
    assert not update_matches(handler, {'spec': {'field': 'x', 'o': 1}}, {'spec': {'field': 'x', 'o': 2}})


def test_old_and_new_callbacks_get_their_values() -> None:
    calls: List[Any] = []

    def check(value: Any, /, **_: Any) -> bool:
        calls.append(value)
        return True

    assert update_matches(update_handler(old=check, new=check), {'spec': {}}, {'spec': {'field': 'b'}})
    assert calls == [None, 'b']


def test_update_handlers_without_field_match_any_change() -> None:
    handler = make(reason=Reason.UPDATE, field_needs_change=True)
    assert update_matches(handler, {'spec': {'a': 1}}, {'spec': {'a': 2}})


def test_metadata_filters_apply_to_updates_too() -> None:
    handler = update_handler(labels={'app': 'x'})
    new = {'metadata': {'labels': {'app': 'y'}}, 'spec': {'field': 'b'}}
    assert not update_matches(handler, {'spec': {'field': 'a'}}, new)


def test_handlers_without_field_needs_change_check_the_current_state_on_updates() -> None:
    handler = make(initial=True, field=('spec', 'field'), value='x')
    old, new = {'spec': {'field': 'x', 'o': 1}}, {'spec': {'field': 'x', 'o': 2}}
    assert match_resource_filters(handler, body=new, kwargs=KWARGS, diff=Diff(diff(old, new)), old=old, new=new)


def test_diff_is_used_for_update_causes_only() -> None:
    handler = make(initial=True, field=('spec', 'field'), field_needs_change=True)
    cause = make_cause(Reason.RESUME, initial=True, old={'spec': {'field': 'x'}}, new={'spec': {'field': 'x'}})
    assert select_changing_handlers([handler], cause=cause, kwargs=KWARGS) == [handler]


def field_handler(**kwargs: Any) -> Any:
    return make(reason=None, field=('spec', 'field'), field_needs_change=True, **kwargs)


def test_field_handlers_are_selected_at_creation_when_the_field_is_set() -> None:
    handler = field_handler()
    cause = make_cause(Reason.CREATE, old=None, new={'spec': {'field': 'x'}})
    assert select_changing_handlers([handler], cause=cause, kwargs=KWARGS) == [handler]


def test_field_handlers_are_not_selected_at_creation_without_the_field() -> None:
    cause = make_cause(Reason.CREATE, old=None, new={'spec': {'other': 'x'}})
    assert select_changing_handlers([field_handler()], cause=cause, kwargs=KWARGS) == []


def test_field_handlers_at_creation_apply_their_value_filters() -> None:
    cause = make_cause(Reason.CREATE, old=None, new={'spec': {'field': 'x'}})
    assert select_changing_handlers([field_handler(value='y')], cause=cause, kwargs=KWARGS) == []
    assert select_changing_handlers([field_handler(new='x')], cause=cause, kwargs=KWARGS) != []


def test_field_handlers_are_not_selected_at_resuming_of_an_unchanged_object() -> None:
    body = {'spec': {'field': 'x'}}
    cause = make_cause(Reason.RESUME, initial=True, old=body, new=body)
    assert select_changing_handlers([field_handler()], cause=cause, kwargs=KWARGS) == []


# The default registry.

@pytest.fixture()
def default_registry_restored() -> Iterator[None]:
    original = get_default_registry()
    yield
    set_default_registry(original)


@pytest.mark.usefixtures('default_registry_restored')
def test_default_registry_is_created_once_and_reused() -> None:
    registries._default_registry = None
    first = get_default_registry()
    assert isinstance(first, OperatorRegistry)
    assert get_default_registry() is first


@pytest.mark.usefixtures('default_registry_restored')
def test_default_registry_can_be_replaced() -> None:
    new = OperatorRegistry()
    set_default_registry(new)
    assert get_default_registry() is new
