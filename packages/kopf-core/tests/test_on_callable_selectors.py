"""
Callable resource selectors in the decorators (``@kopf.on.create(lambda r: ...)``):
the handlers are registered with them and serve exactly the resources they accept.
"""
from typing import Any, Callable, Iterator

import pytest

import kopf
from kopf import on
from kopf._cogs.structs.references import Resource, Selector
from kopf._core.intents.registries import OperatorRegistry

KEX = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
PODS = Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
EVENTS = Resource('', 'v1', 'events', kind='Event', namespaced=True)


def is_kopf(resource: Resource) -> bool:
    return resource.group == 'kopf.dev'


def handler_fn(**_: Any) -> None:
    pass


@pytest.fixture()
def registry() -> Iterator[OperatorRegistry]:
    yield OperatorRegistry()


RESOURCE_DECORATORS = [
    pytest.param(on.event, id='event'),
    pytest.param(on.create, id='create'),
    pytest.param(on.update, id='update'),
    pytest.param(on.delete, id='delete'),
    pytest.param(on.resume, id='resume'),
    pytest.param(on.daemon, id='daemon'),
    pytest.param(on.timer, id='timer'),
    pytest.param(on.index, id='index'),
]


@pytest.mark.parametrize('decorator', RESOURCE_DECORATORS)
def test_callable_is_the_handlers_selector(registry: OperatorRegistry, decorator: Callable[..., Any]) -> None:
    kwargs = {'interval': 1} if decorator is on.timer else {}
    decorator(is_kopf, registry=registry, **kwargs)(handler_fn)
    assert list(registry.selectors) == [Selector(is_kopf)]


def test_watching_handlers_serve_only_the_accepted_resources(registry: OperatorRegistry) -> None:
    kopf.on.event(is_kopf, registry=registry)(handler_fn)
    assert len(registry.get_watching_handlers(resource=KEX)) == 1
    assert registry.get_watching_handlers(resource=PODS) == []


def test_changing_handlers_serve_only_the_accepted_resources(registry: OperatorRegistry) -> None:
    kopf.on.create(is_kopf, registry=registry)(handler_fn)
    assert len(registry.get_changing_handlers(resource=KEX)) == 1
    assert registry.get_changing_handlers(resource=PODS) == []


def test_callable_accepting_everything_still_skips_the_events(registry: OperatorRegistry) -> None:
    kopf.on.event(lambda r: True, registry=registry)(handler_fn)
    assert len(registry.get_watching_handlers(resource=PODS)) == 1
    assert registry.get_watching_handlers(resource=EVENTS) == []


def test_callable_is_narrowed_by_the_group_kwarg(registry: OperatorRegistry) -> None:
    kopf.on.event(lambda r: True, group='', registry=registry)(handler_fn)
    assert len(registry.get_watching_handlers(resource=PODS)) == 1
    assert registry.get_watching_handlers(resource=KEX) == []


def test_callable_with_other_positionals_is_refused(registry: OperatorRegistry) -> None:
    with pytest.raises(TypeError, match=r"callable resource selector takes no other"):
        kopf.on.event(is_kopf, 'pods', registry=registry)


def test_callable_with_a_name_kwarg_is_refused(registry: OperatorRegistry) -> None:
    with pytest.raises(TypeError, match=r"Ambiguous resource specification"):
        kopf.on.event(is_kopf, plural='pods', registry=registry)
