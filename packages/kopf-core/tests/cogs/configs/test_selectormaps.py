"""
Selector mappings: keys written as in the decorators, normalised to selectors,
and the values of all matching keys collected for a resource, in insertion order.
"""
from typing import Any

import pytest

import kopf
from kopf._cogs.configs.selectormaps import SelectorMapping
from kopf._cogs.structs.references import Resource, Selector

PODS = Resource(group='', version='v1', plural='pods', kind='Pod', singular='pod', shortcuts=frozenset({'po'}))
JOBS = Resource(group='batch', version='v1', plural='jobs', kind='Job', singular='job')
KEXS = Resource(group='kopf.dev', version='v1', plural='kopfexamples', kind='KopfExample', singular='kopfexample')
EVENTS = Resource(group='', version='v1', plural='events', kind='Event', singular='event')


def is_batch(resource: Resource) -> bool:
    return resource.group == 'batch'


@pytest.mark.parametrize('key, selector', [
    pytest.param('pods', Selector('pods'), id='name'),
    pytest.param('v1/pods', Selector('v1', 'pods'), id='version-slash-name'),
    pytest.param('kopf.dev/v1/kopfexamples', Selector('kopf.dev', 'v1', 'kopfexamples'), id='group-version-name'),
    pytest.param('kopfexamples.kopf.dev', Selector('kopf.dev', 'kopfexamples'), id='name-dot-group'),
    pytest.param(('batch', 'v1', 'jobs'), Selector('batch', 'v1', 'jobs'), id='tuple-of-three'),
    pytest.param(('batch/v1', 'jobs'), Selector('batch', 'v1', 'jobs'), id='tuple-of-two'),
    pytest.param(('jobs',), Selector('jobs'), id='tuple-of-one'),
    pytest.param(kopf.EVERYTHING, Selector(kopf.EVERYTHING), id='everything'),
    pytest.param(Selector(kind='Job'), Selector(kind='Job'), id='selector'),
    pytest.param(is_batch, Selector(is_batch), id='callable'),
])
def test_keys_are_normalised_to_selectors(key: Any, selector: Selector) -> None:
    mapping: SelectorMapping[str] = SelectorMapping()
    mapping[key] = 'value'
    assert list(mapping) == [selector]
    assert mapping[selector] == 'value'
    assert mapping[key] == 'value'
    assert key in mapping


def test_the_same_resource_written_differently_is_the_same_key() -> None:
    mapping: SelectorMapping[str] = SelectorMapping()
    mapping['batch', 'v1', 'jobs'] = 'first'
    mapping['batch/v1/jobs'] = 'second'
    assert len(mapping) == 1
    assert mapping[Selector('batch', 'v1', 'jobs')] == 'second'


def test_deletion_and_mapping_methods() -> None:
    mapping: SelectorMapping[str] = SelectorMapping({'pods': 'a', ('batch', 'v1', 'jobs'): 'b'})
    del mapping['pods']
    assert 'pods' not in mapping
    assert dict(mapping) == {Selector('batch', 'v1', 'jobs'): 'b'}
    assert mapping.get('nonexistent') is None
    assert mapping.pop(('batch', 'v1', 'jobs')) == 'b'
    assert len(mapping) == 0
    with pytest.raises(KeyError):
        mapping['pods']


def test_collect_returns_all_matching_values_in_insertion_order() -> None:
    mapping: SelectorMapping[str] = SelectorMapping()
    mapping[kopf.EVERYTHING] = 'everything'
    mapping['v1/pods'] = 'pods'
    mapping[is_batch] = 'batch'
    mapping['po'] = 'pods-by-shortcut'
    mapping['batch', 'v1', 'jobs'] = 'jobs'
    assert mapping.collect(PODS) == ['everything', 'pods', 'pods-by-shortcut']
    assert mapping.collect(JOBS) == ['everything', 'batch', 'jobs']
    assert mapping.collect(KEXS) == ['everything']


def test_collect_skips_events_for_everything_and_callables() -> None:
    mapping: SelectorMapping[str] = SelectorMapping()
    mapping[kopf.EVERYTHING] = 'everything'
    mapping[lambda resource: True] = 'callable'
    mapping['events'] = 'events'
    assert mapping.collect(EVENTS) == ['events']


def test_collect_of_an_empty_mapping() -> None:
    assert SelectorMapping[str]().collect(PODS) == []


def test_repr_shows_the_selectors() -> None:
    mapping: SelectorMapping[str] = SelectorMapping({'pods': 'a=b'})
    assert repr(mapping) == "SelectorMapping({Selector(any_name='pods'): 'a=b'})"


@pytest.mark.parametrize('key, error', [
    pytest.param(123, r"Unsupported resource selector 123", id='int'),
    pytest.param(None, r"Unsupported resource selector None", id='none'),
    pytest.param(('a', 'b', 'c', 'd'), r"takes 1 to 3 values", id='tuple-of-four'),
    pytest.param((), r"takes 1 to 3 values", id='empty-tuple'),
    pytest.param('kopf.dev/v1', r"Resource name is missing", id='api-without-name'),
    pytest.param((is_batch, 'jobs'), r"callable resource selector takes no other", id='callable-with-a-name'),
    pytest.param(('batch', 1), r"must be a string", id='tuple-with-an-int'),
])
def test_invalid_keys_are_refused_with_one_clear_error(key: Any, error: str) -> None:
    mapping: SelectorMapping[str] = SelectorMapping()
    with pytest.raises(TypeError, match=error):
        mapping[key] = 'value'
    with pytest.raises(TypeError, match=error):
        mapping.__contains__(key)
