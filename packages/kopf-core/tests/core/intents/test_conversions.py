"""
``@kopf.on.convert``: what it registers, what it refuses, and which chain of functions converts a resource.

Inputs: functions decorated with the public decorator into a private registry,
and resources as discovery reports them. Nothing is mocked: the chains are
found by the registry itself.
"""
import inspect
from typing import Any, List, Optional

import pytest

import kopf
from kopf._cogs.structs.references import Resource
from kopf._core.intents.conversions import ConversionHandler

KOPFEXAMPLES = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', singular='kopfexample',
                        shortcuts=frozenset({'kex'}), namespaced=True)
OTHERS = Resource('kopf.dev', 'v1', 'others', kind='Other', namespaced=True)


@pytest.fixture()
def registry() -> kopf.OperatorRegistry:
    return kopf.OperatorRegistry()


def fn(**_: Any) -> None:
    pass


def register(registry: kopf.OperatorRegistry, source: str, target: str, *names: Any, **kwargs: Any) -> Any:
    def conversion(**_: Any) -> None:
        pass
    conversion.__qualname__ = f'{source}_to_{target}'
    return kopf.on.convert(*(names or ('kopf.dev', 'kopfexamples')), source=source, target=target,
                           registry=registry, **kwargs)(conversion)


def chain_of(registry: kopf.OperatorRegistry, source: str, target: str,
             resource: Resource = KOPFEXAMPLES) -> Optional[List[str]]:
    chain = registry.get_conversion_handlers().find_chain(resource, source=source, target=target)
    return None if chain is None else [f'{h.source}>{h.target}' for h in chain]


# Registration.

def test_signature_has_the_resource_and_the_versions() -> None:
    parameters = inspect.signature(kopf.on.convert).parameters
    assert list(parameters)[3:] == ['group', 'version', 'kind', 'plural', 'singular', 'shortcut', 'category',
                                    'id', 'param', 'source', 'target', 'registry']
    assert parameters['source'].default is inspect.Parameter.empty
    assert parameters['target'].default is inspect.Parameter.empty


def test_decorator_registers_a_conversion_handler(registry: kopf.OperatorRegistry) -> None:
    returned = kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2', id='conv', param=5,
                               registry=registry)(fn)
    assert returned is fn
    [handler] = registry.get_conversion_handlers().get_all_handlers()
    assert isinstance(handler, ConversionHandler)
    assert (handler.fn, handler.id, handler.param, handler.source, handler.target) == (fn, 'conv', 5, 'v1', 'v2')
    assert handler.title == "Conversion 'conv'"
    assert registry.has_conversion_handlers()
    assert not registry.has_webhook_handlers()
    assert registry.selectors == []  # nothing is watched because of a conversion


def test_the_id_defaults_to_the_function_name(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    [handler] = registry.get_conversion_handlers().get_all_handlers()
    assert handler.id == 'fn'


def test_the_default_registry_is_used_without_registry(registry: kopf.OperatorRegistry) -> None:
    previous = kopf.get_default_registry()
    kopf.set_default_registry(registry)
    try:
        kopf.on.convert('kopfexamples', source='v1', target='v2')(fn)
    finally:
        kopf.set_default_registry(previous)
    assert registry.has_conversion_handlers()


def test_the_same_function_twice_is_one_handler(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    assert len(registry.get_conversion_handlers().get_all_handlers()) == 1


def test_another_function_for_the_same_versions_is_refused(registry: kopf.OperatorRegistry) -> None:
    register(registry, 'v1', 'v2')
    with pytest.raises(ValueError, match=r"from 'v1' to 'v2' is already registered as 'v1_to_v2': "
                                         r"one function per pair of versions\."):
        kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2', registry=registry)(fn)


@pytest.mark.parametrize('kwargs, error, message', [
    pytest.param(dict(source='v1', target='v1'), ValueError,
                 r"needs two different versions, not source=target='v1'\.", id='same'),
    pytest.param(dict(source='kopf.dev/v1', target='v2'), ValueError,
                 r"takes the version only in source= \(e\.g\. 'v1'\), not 'kopf\.dev/v1'", id='group-in-version'),
    pytest.param(dict(source='', target='v2'), TypeError,
                 r"needs source= as a version name \(e\.g\. 'v1'\), not ''\.", id='empty'),
    pytest.param(dict(source='v1', target=None), TypeError,
                 r"needs target= as a version name \(e\.g\. 'v1'\), not None\.", id='none'),
])
def test_wrong_versions_are_refused_at_decoration(kwargs: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        kopf.on.convert('kopfexamples', **kwargs)


def test_missing_versions_are_refused_by_the_signature() -> None:
    with pytest.raises(TypeError, match=r"^convert\(\) missing a required argument: 'source'$"):
        kopf.on.convert('kopfexamples', target='v2')  # type: ignore[call-arg]


def test_a_resource_with_a_version_is_refused() -> None:
    with pytest.raises(ValueError, match=r"takes the resource without a version \(got 'v1'\): "
                                         r"the versions are source= and target="):
        kopf.on.convert('kopf.dev/v1', 'kopfexamples', source='v1', target='v2')


def test_filters_are_not_options_of_conversions() -> None:
    with pytest.raises(TypeError, match=r"^convert\(\) got an unexpected keyword argument 'labels'$"):
        kopf.on.convert('kopfexamples', source='v1', target='v2', labels={'a': 'b'})  # type: ignore[call-arg]


# Chains.

def test_direct_function_is_a_chain_of_one(registry: kopf.OperatorRegistry) -> None:
    register(registry, 'v1', 'v2')
    assert chain_of(registry, 'v1', 'v2') == ['v1>v2']


def test_no_function_backwards_means_no_chain(registry: kopf.OperatorRegistry) -> None:
    register(registry, 'v1', 'v2')
    assert chain_of(registry, 'v2', 'v1') is None


def test_chain_through_intermediate_versions(registry: kopf.OperatorRegistry) -> None:
    register(registry, 'v2', 'v3')
    register(registry, 'v1', 'v2')
    register(registry, 'v3', 'v4')
    assert chain_of(registry, 'v1', 'v4') == ['v1>v2', 'v2>v3', 'v3>v4']
    assert chain_of(registry, 'v2', 'v4') == ['v2>v3', 'v3>v4']


def test_shortest_chain_is_chosen(registry: kopf.OperatorRegistry) -> None:
    register(registry, 'v1', 'v2')
    register(registry, 'v2', 'v3')
    register(registry, 'v3', 'v4')
    register(registry, 'v2', 'v4')
    assert chain_of(registry, 'v1', 'v4') == ['v1>v2', 'v2>v4']


def test_cycles_do_not_loop(registry: kopf.OperatorRegistry) -> None:
    register(registry, 'v1', 'v2')
    register(registry, 'v2', 'v1')
    assert chain_of(registry, 'v1', 'v3') is None


def test_functions_of_other_resources_are_not_used(registry: kopf.OperatorRegistry) -> None:
    register(registry, 'v1', 'v2', 'kopf.dev', 'others')
    assert chain_of(registry, 'v1', 'v2') is None
    assert chain_of(registry, 'v1', 'v2', resource=OTHERS) == ['v1>v2']


@pytest.mark.parametrize('names', [
    pytest.param(('kopfexamples',), id='plural'),
    pytest.param(('kopf.dev', 'KopfExample'), id='kind'),
    pytest.param(('kex',), id='shortcut'),
    pytest.param(('kopfexamples.kopf.dev',), id='plural.group'),
])
def test_resources_are_matched_by_any_of_their_names(registry: kopf.OperatorRegistry, names: Any) -> None:
    register(registry, 'v1', 'v2', *names)
    assert chain_of(registry, 'v1', 'v2') == ['v1>v2']


def test_first_declared_of_equal_functions_from_several_selectors_is_used(registry: kopf.OperatorRegistry) -> None:
    first = register(registry, 'v1', 'v2', 'kopfexamples')
    register(registry, 'v1', 'v2', 'kex')
    chain = registry.get_conversion_handlers().find_chain(KOPFEXAMPLES, source='v1', target='v2')
    assert chain is not None and [h.fn for h in chain] == [first]
