"""
Callable resource selectors, as in Kopf 1.45: ``@kopf.on.event(lambda r: ...)``.

A callable takes a :class:`kopf.Resource` and tells whether it is served. It sees
every version of every resource (not only the preferred ones), except the k8s-events,
which are never served by callables and ``kopf.EVERYTHING`` (no "event explosions");
``group=`` and ``version=`` narrow it down. Single strings with a slash name the
API and then the resource (``'v1/pods'``), as the settings' examples write them.
"""
from typing import Any, List

import pytest

from kopf._cogs.structs.references import EVERYTHING, Resource, Selector

PODS = Resource('', 'v1', 'pods', kind='Pod', singular='pod', namespaced=True)
JOBS = Resource('batch', 'v1', 'jobs', kind='Job', singular='job', namespaced=True)
KEX_V1 = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
KEX_V1BETA1 = Resource('kopf.dev', 'v1beta1', 'kopfexamples', kind='KopfExample', namespaced=True,
                       preferred=False)
EVENTS = Resource('', 'v1', 'events', kind='Event', namespaced=True)
NEW_EVENTS = Resource('events.k8s.io', 'v1', 'events', kind='Event', namespaced=True)
ALL = [PODS, JOBS, KEX_V1, KEX_V1BETA1, EVENTS, NEW_EVENTS]


def is_kex(resource: Resource) -> bool:
    return resource.plural == 'kopfexamples'


def test_callable_is_remembered_as_such() -> None:
    selector = Selector(is_kex)
    assert selector.fn is is_kex
    assert selector.any_name is None
    assert selector.group is None and selector.version is None
    assert Selector(fn=is_kex) == selector
    assert repr(selector) == f'Selector(fn={is_kex!r})'


def test_callable_decides_what_matches() -> None:
    selector = Selector(is_kex)
    assert [r for r in ALL if selector.check(r)] == [KEX_V1, KEX_V1BETA1]


def test_callable_sees_all_versions_and_selects_them_all() -> None:
    assert Selector(is_kex).select(ALL) == {KEX_V1, KEX_V1BETA1}


def test_callable_can_pick_the_preferred_version_itself() -> None:
    selector = Selector(lambda r: r.plural == 'kopfexamples' and r.preferred)
    assert selector.select(ALL) == {KEX_V1}


def test_callable_is_narrowed_by_the_group_and_version() -> None:
    everything = Selector(lambda r: True, group='kopf.dev', version='v1beta1')
    assert everything.select(ALL) == {KEX_V1BETA1}


def test_callable_never_serves_the_events_and_is_not_even_asked_about_them() -> None:
    asked: List[Resource] = []

    def fn(resource: Resource) -> bool:
        asked.append(resource)
        return True
    selected = Selector(fn).select(ALL)
    assert selected == {PODS, JOBS, KEX_V1, KEX_V1BETA1}
    assert EVENTS not in asked and NEW_EVENTS not in asked


def test_callable_result_is_taken_by_its_truth() -> None:
    assert Selector(lambda r: 'yes').check(PODS)  # type: ignore[arg-type,return-value]
    assert not Selector(lambda r: 0).check(PODS)  # type: ignore[arg-type,return-value]


def test_callable_errors_escalate() -> None:
    def fn(resource: Resource) -> bool:
        raise ValueError('boom')
    with pytest.raises(ValueError, match='boom'):
        Selector(fn).check(PODS)


def test_callable_is_neither_specific_nor_ambiguous() -> None:
    selector = Selector(lambda r: True)
    assert not selector.is_specific
    assert not selector.is_ambiguous(ALL)


def test_callables_are_hashable_keys() -> None:
    assert len({Selector(is_kex), Selector(is_kex), Selector(EVERYTHING)}) == 2


@pytest.mark.parametrize('args, kwargs, error', [
    pytest.param((is_kex, 'pods'), {}, r"callable resource selector takes no other", id='callable-and-name'),
    pytest.param(('v1', is_kex), {}, r"callable resource selector takes no other", id='name-and-callable'),
    pytest.param((is_kex,), {'plural': 'pods'}, r"Ambiguous resource specification", id='callable-and-plural'),
    pytest.param((is_kex,), {'fn': is_kex}, r"given twice", id='callable-twice'),
    pytest.param((EVERYTHING,), {'fn': is_kex}, r"Ambiguous resource specification", id='everything-and-fn'),
    pytest.param((123,), {}, r"must be a string, kopf.EVERYTHING, or a callable", id='int'),
])
def test_invalid_callable_specifications_are_refused(args: Any, kwargs: Any, error: str) -> None:
    with pytest.raises(TypeError, match=error):
        Selector(*args, **kwargs)


@pytest.mark.parametrize('text, expected', [
    pytest.param('v1/pods', Selector('v1', 'pods'), id='core'),
    pytest.param('batch/v1/jobs', Selector('batch', 'v1', 'jobs'), id='group-version-name'),
    pytest.param('kopf.dev/kopfexamples', Selector('kopf.dev', 'kopfexamples'), id='group-name'),
])
def test_slashed_single_strings_end_with_the_name(text: str, expected: Selector) -> None:
    assert Selector(text) == expected


@pytest.mark.parametrize('text', ['kopf.dev/v1', 'v1/', '/pods', 'batch/v1beta1'])
def test_slashed_single_strings_without_a_name_are_refused(text: str) -> None:
    with pytest.raises(TypeError, match=r"Resource name is missing"):
        Selector(text)
