"""
The per-kind sub-registries, in the shape that operators' tests and tools introspect (as in Kopf).

E.g. ``kopf.get_default_registry()._spawning._handlers`` or
``registry._watching.get_all_handlers()``: each kind of handler is kept in an
object of its own, whose live list the engine reads, so that a handler
replaced there (e.g. with its function wrapped) is the one the engine runs.
"""
import dataclasses
import logging
from typing import Any, Callable, Optional

import pytest

import kopf
from kopf import on
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.diffs import diff
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource, Selector
from kopf._core.intents.causes import BaseCause, ChangingCause, Reason, WatchingCause
from kopf._core.intents.handlers import Activity, ChangingHandler, HandlerId, build_handler_id
from kopf._core.intents.registries import (
    ActivityRegistry,
    ChangingRegistry,
    GenericRegistry,
    IndexingRegistry,
    OperatorRegistry,
    ResourceRegistry,
    SpawningRegistry,
    WatchingRegistry,
    WebhooksRegistry,
)

LOGGER = logging.getLogger(__name__)
KOPFEXAMPLES = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
PODS = Resource('', 'v1', 'pods', kind='Pod', namespaced=True)

# The names and the classes as in Kopf 1.45.2 (dir(kopf.OperatorRegistry()) there).
SUBREGISTRIES = {
    '_activities': ActivityRegistry,
    '_indexing': IndexingRegistry,
    '_watching': WatchingRegistry,
    '_spawning': SpawningRegistry,
    '_changing': ChangingRegistry,
    '_webhooks': WebhooksRegistry,
}

# The methods of Kopf 1.45.2's sub-registries, by class (their public-ish interface).
METHODS = {
    ActivityRegistry: ['append', 'get_all_handlers', 'get_handlers', 'iter_handlers'],
    WatchingRegistry: ['append', 'get_all_handlers', 'get_all_selectors', 'get_extra_fields', 'get_handlers',
                       'has_handlers', 'iter_extra_fields', 'iter_handlers'],
    IndexingRegistry: ['append', 'get_all_handlers', 'get_all_selectors', 'get_extra_fields', 'get_handlers',
                       'has_handlers', 'iter_extra_fields', 'iter_handlers'],
    WebhooksRegistry: ['append', 'get_all_handlers', 'get_all_selectors', 'get_extra_fields', 'get_handlers',
                       'has_handlers', 'iter_extra_fields', 'iter_handlers'],
    SpawningRegistry: ['append', 'get_all_handlers', 'get_all_selectors', 'get_extra_fields', 'get_handlers',
                       'has_handlers', 'iter_extra_fields', 'iter_handlers', 'requires_finalizer'],
    ChangingRegistry: ['append', 'get_all_handlers', 'get_all_selectors', 'get_extra_fields', 'get_handlers',
                       'get_resource_handlers', 'has_handlers', 'iter_extra_fields', 'iter_handlers',
                       'prematch', 'requires_finalizer'],
}


@pytest.fixture()
def registry() -> OperatorRegistry:
    return OperatorRegistry()


def body(**fields: Any) -> Body:
    return Body({'metadata': {'name': 'kex1', 'namespace': 'ns1', 'labels': {}}, **fields})


def changing_cause(reason: Reason, *, resource: Resource = KOPFEXAMPLES, **fields: Any) -> ChangingCause:
    return ChangingCause(resource=resource, body=body(**fields), patch=Patch(), memo=None, logger=LOGGER,
                         reason=reason, old={}, new=fields, diff=diff({}, fields))


def resource_cause(resource: Resource = KOPFEXAMPLES, **fields: Any) -> BaseCause:
    return BaseCause(resource=resource, body=body(**fields), patch=Patch(), memo=None, logger=LOGGER)


def handler_fn(**_: Any) -> None:
    pass


@pytest.mark.parametrize('name, cls', list(SUBREGISTRIES.items()))
def test_each_kind_has_a_subregistry_of_its_own(registry: OperatorRegistry, name: str, cls: type) -> None:
    subregistry = getattr(registry, name)
    assert type(subregistry) is cls
    assert isinstance(subregistry, GenericRegistry)
    assert subregistry._handlers == []
    assert subregistry.get_all_handlers() == []


def test_the_registry_has_the_subregistries_as_in_kopf(registry: OperatorRegistry) -> None:
    # Kopf's, in Kopf's order; then ours that Kopf never had (@kopf.on.convert).
    assert list(vars(registry)) == [*SUBREGISTRIES, '_conversions']


@pytest.mark.parametrize('cls, methods', list(METHODS.items()))
def test_subregistries_have_the_methods_of_kopf(cls: type, methods: list[str]) -> None:
    assert [name for name in methods if not callable(getattr(cls, name, None))] == []


def test_resource_subregistries_share_a_base() -> None:
    for cls in [WatchingRegistry, IndexingRegistry, WebhooksRegistry, SpawningRegistry, ChangingRegistry]:
        assert issubclass(cls, ResourceRegistry)
    assert not issubclass(ActivityRegistry, ResourceRegistry)


@pytest.mark.parametrize('name, decorator', [
    pytest.param('_activities', lambda reg: on.startup(registry=reg), id='startup'),
    pytest.param('_activities', lambda reg: on.cleanup(registry=reg), id='cleanup'),
    pytest.param('_activities', lambda reg: on.login(registry=reg), id='login'),
    pytest.param('_activities', lambda reg: on.probe(registry=reg), id='probe'),
    pytest.param('_watching', lambda reg: on.event('kopfexamples', registry=reg), id='event'),
    pytest.param('_changing', lambda reg: on.create('kopfexamples', registry=reg), id='create'),
    pytest.param('_changing', lambda reg: on.update('kopfexamples', registry=reg), id='update'),
    pytest.param('_changing', lambda reg: on.delete('kopfexamples', registry=reg), id='delete'),
    pytest.param('_changing', lambda reg: on.resume('kopfexamples', registry=reg), id='resume'),
    pytest.param('_changing', lambda reg: on.field('kopfexamples', field='spec.x', registry=reg), id='field'),
    pytest.param('_spawning', lambda reg: on.daemon('kopfexamples', registry=reg), id='daemon'),
    pytest.param('_spawning', lambda reg: on.timer('kopfexamples', interval=1, registry=reg), id='timer'),
    pytest.param('_indexing', lambda reg: on.index('kopfexamples', registry=reg), id='index'),
    pytest.param('_webhooks', lambda reg: on.validate('kopfexamples', registry=reg), id='validate'),
    pytest.param('_webhooks', lambda reg: on.mutate('kopfexamples', registry=reg), id='mutate'),
])
def test_decorators_register_into_their_subregistry(
        registry: OperatorRegistry, name: str, decorator: Callable[[OperatorRegistry], Any]) -> None:
    decorator(registry)(handler_fn)
    for other in SUBREGISTRIES:
        handlers_ = getattr(registry, other).get_all_handlers()
        assert [h.fn for h in handlers_] == ([handler_fn] if other == name else [])
    assert list(getattr(registry, name)._handlers) == list(getattr(registry, name).get_all_handlers())


def test_the_default_registry_is_introspectable() -> None:
    original = kopf.get_default_registry()
    kopf.set_default_registry(OperatorRegistry())
    try:
        @kopf.timer('kopfexamples', interval=1)
        def timer_fn(**_: Any) -> None:
            pass

        assert [h.fn for h in kopf.get_default_registry()._spawning._handlers] == [timer_fn]
        assert kopf.get_default_registry()._watching.get_all_handlers() == []
    finally:
        kopf.set_default_registry(original)


def test_get_all_handlers_is_a_copy(registry: OperatorRegistry) -> None:
    on.create('kopfexamples', registry=registry)(handler_fn)
    handlers_ = registry._changing.get_all_handlers()
    assert isinstance(handlers_, list)
    handlers_.clear()
    assert len(registry._changing.get_all_handlers()) == 1


def test_replaced_handlers_are_the_ones_the_engine_serves(registry: OperatorRegistry) -> None:
    # E.g. a tool that wraps every timer of the operator (handlers are frozen: replaced, not mutated).
    on.timer('kopfexamples', interval=1, registry=registry)(handler_fn)

    def wrapped(**kwargs: Any) -> None:
        pass

    spawning = registry._spawning._handlers
    spawning[:] = [dataclasses.replace(handler, fn=wrapped) for handler in spawning]
    assert [h.fn for h in registry.get_spawning_handlers(resource=KOPFEXAMPLES)] == [wrapped]


def test_appended_handlers_are_served(registry: OperatorRegistry) -> None:
    handler = ChangingHandler(fn=handler_fn, id=HandlerId('appended'), param=None, errors=None, timeout=None,
                              retries=None, backoff=None, selector=Selector('kopfexamples'),
                              reason=Reason.CREATE)
    assert not registry._changing.has_handlers(resource=KOPFEXAMPLES)
    registry._changing.append(handler)
    assert registry._changing.has_handlers(resource=KOPFEXAMPLES)
    assert registry.get_changing_handlers(resource=KOPFEXAMPLES) == [handler]
    assert registry.has_state_handlers(resource=KOPFEXAMPLES)


def test_appending_the_same_handler_twice_keeps_one(registry: OperatorRegistry) -> None:
    on.create('kopfexamples', registry=registry)(handler_fn)
    registry._changing.append(registry._changing._handlers[0])
    assert len(registry._changing.get_all_handlers()) == 1


def test_index_ids_stay_unique_when_appended_directly(registry: OperatorRegistry) -> None:
    on.index('kopfexamples', id='idx', registry=registry)(handler_fn)
    other = dataclasses.replace(registry._indexing._handlers[0], fn=lambda **_: None)
    with pytest.raises(ValueError, match="'idx' is already declared"):
        registry._indexing.append(other)


def test_activity_handlers_by_activity(registry: OperatorRegistry) -> None:
    on.startup(registry=registry)(handler_fn)
    on.cleanup(registry=registry)(handler_fn)
    assert [h.activity for h in registry._activities.get_handlers(activity=Activity.STARTUP)] == [Activity.STARTUP]
    assert [h.activity for h in registry._activities.iter_handlers(activity=Activity.CLEANUP)] == [Activity.CLEANUP]
    assert registry._activities.get_handlers(activity=Activity.PROBE) == []


def test_resource_queries(registry: OperatorRegistry) -> None:
    on.create('kopfexamples', field='status.x', registry=registry)(handler_fn)
    on.event('pods', registry=registry)(handler_fn)
    assert registry._changing.get_all_selectors() == frozenset({Selector('kopfexamples')})
    assert registry._watching.get_all_selectors() == frozenset({Selector('pods')})
    assert registry._changing.has_handlers(resource=KOPFEXAMPLES)
    assert not registry._changing.has_handlers(resource=PODS)
    assert registry._changing.get_extra_fields(resource=KOPFEXAMPLES) == {('status', 'x')}
    assert list(registry._changing.iter_extra_fields(resource=PODS)) == []
    assert [h.fn for h in registry._changing.get_resource_handlers(resource=KOPFEXAMPLES)] == [handler_fn]


def test_handlers_by_cause_apply_the_filters(registry: OperatorRegistry) -> None:
    on.event('kopfexamples', labels={'x': 'y'}, registry=registry)(handler_fn)
    on.event('kopfexamples', id='when', when=lambda spec, **_: spec.get('on'), registry=registry)(handler_fn)
    matching = WatchingCause(resource=KOPFEXAMPLES, body=Body({'metadata': {'labels': {'x': 'y'}}}),
                             patch=Patch(), memo=None, logger=LOGGER, type='ADDED')
    assert [h.id for h in registry._watching.get_handlers(matching)] == ['handler_fn']
    assert [h.id for h in registry._watching.iter_handlers(resource_cause(spec={'on': True}))] == ['when']
    assert list(registry._watching.iter_handlers(resource_cause(resource=PODS, spec={'on': True}))) == []
    assert registry._watching.get_handlers(matching, excluded={HandlerId('handler_fn')}) == []


def test_changing_handlers_by_cause(registry: OperatorRegistry) -> None:
    on.create('kopfexamples', registry=registry)(handler_fn)
    on.update('kopfexamples', id='upd', registry=registry)(handler_fn)
    assert [h.id for h in registry._changing.get_handlers(changing_cause(Reason.CREATE))] == ['handler_fn']
    assert [h.id for h in registry._changing.iter_handlers(changing_cause(Reason.UPDATE))] == ['upd']
    assert registry._changing.prematch(changing_cause(Reason.CREATE))


def test_finalizers_are_required_by_deletion_handlers_and_daemons(registry: OperatorRegistry) -> None:
    cause = changing_cause(Reason.CREATE)
    assert not registry._changing.requires_finalizer(cause)
    assert not registry._spawning.requires_finalizer(cause)
    on.delete('kopfexamples', registry=registry)(handler_fn)
    on.daemon('kopfexamples', registry=registry)(handler_fn)
    assert registry._changing.requires_finalizer(cause)
    assert registry._spawning.requires_finalizer(cause)
    assert not registry._spawning.requires_finalizer(cause, excluded={HandlerId('handler_fn')})


def test_webhooks_by_cause_respect_the_operations(registry: OperatorRegistry) -> None:
    on.validate('kopfexamples', operations=['CREATE'], registry=registry)(handler_fn)

    @dataclasses.dataclass
    class AdmissionCause(BaseCause):
        operation: Optional[str] = None
        subresource: Optional[str] = None

    def admission(operation: str) -> AdmissionCause:
        return AdmissionCause(resource=KOPFEXAMPLES, body=body(), patch=Patch(), memo=None, logger=LOGGER,
                              operation=operation)

    assert len(registry._webhooks.get_handlers(admission('CREATE'))) == 1
    assert registry._webhooks.get_handlers(admission('DELETE')) == []


def test_handler_ids_in_excluded_use_kopf_ids(registry: OperatorRegistry) -> None:
    on.create('kopfexamples', registry=registry)(handler_fn)
    assert registry._changing._handlers[0].id == build_handler_id(handler_fn, None, None)


def test_changing_handlers_by_a_cause_without_a_reason_are_filtered_only(registry: OperatorRegistry) -> None:
    on.create('kopfexamples', labels={'x': 'y'}, registry=registry)(handler_fn)
    matching = BaseCause(resource=KOPFEXAMPLES, body=Body({'metadata': {'labels': {'x': 'y'}}}),
                         patch=Patch(), memo=None, logger=LOGGER)
    assert [h.id for h in registry._changing.get_handlers(matching)] == ['handler_fn']
    assert [h.id for h in registry._changing.iter_handlers(resource_cause())] == []


def test_filters_get_the_indices_as_kwargs_overriding_the_frameworks(registry: OperatorRegistry) -> None:
    on.event('kopfexamples', when=lambda name, **_: name == 'from-the-index', registry=registry)(handler_fn)
    cause = BaseCause(resource=KOPFEXAMPLES, body=body(), patch=Patch(), memo=None, logger=LOGGER,
                      indices={'name': 'from-the-index'})
    assert len(registry._watching.get_handlers(cause)) == 1
