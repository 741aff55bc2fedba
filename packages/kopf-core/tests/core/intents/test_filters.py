"""
Value filters: literal values, kopf.PRESENT/kopf.ABSENT markers, and value callbacks.

Empty strings are present values; absent values are given to callbacks as ``None``,
positionally, with the handler's kwargs as keywords.
"""
from typing import Any, List

import pytest

from kopf._core.intents.filters import ABSENT, PRESENT, match_meta, match_value, resolve_field

KWARGS = {'spec': {'field': 'value'}, 'name': 'kex1'}


@pytest.mark.parametrize('labels, expected', [
    pytest.param({'app': 'x'}, True, id='present'),
    pytest.param({'app': ''}, True, id='empty-string-is-present'),
    pytest.param({}, False, id='absent'),
])
def test_present_marker(labels: Any, expected: bool) -> None:
    assert match_meta({'app': PRESENT}, labels, KWARGS) is expected


@pytest.mark.parametrize('labels, expected', [
    pytest.param({'app': 'x'}, False, id='present'),
    pytest.param({'app': ''}, False, id='empty-string-is-present'),
    pytest.param({}, True, id='absent'),
])
def test_absent_marker(labels: Any, expected: bool) -> None:
    assert match_meta({'app': ABSENT}, labels, KWARGS) is expected


@pytest.mark.parametrize('labels, expected', [
    pytest.param({'app': 'x'}, True, id='same'),
    pytest.param({'app': 'y'}, False, id='different'),
    pytest.param({}, False, id='absent'),
])
def test_literal_value(labels: Any, expected: bool) -> None:
    assert match_meta({'app': 'x'}, labels, KWARGS) is expected


def test_empty_string_literal_matches_an_empty_value_but_not_an_absent_one() -> None:
    assert match_meta({'app': ''}, {'app': ''}, KWARGS)
    assert not match_meta({'app': ''}, {}, KWARGS)


def test_all_criteria_must_match() -> None:
    assert match_meta({'a': 'x', 'b': PRESENT}, {'a': 'x', 'b': '1'}, KWARGS)
    assert not match_meta({'a': 'x', 'b': PRESENT}, {'a': 'x'}, KWARGS)


def test_no_criteria_match_anything() -> None:
    assert match_meta(None, {}, KWARGS)
    assert match_meta({}, {'a': 'x'}, KWARGS)


def test_value_callback_gets_the_value_positionally_and_the_kwargs() -> None:
    calls: List[Any] = []

    def check(value: Any, /, **kwargs: Any) -> bool:
        calls.append((value, kwargs))
        return True

    assert match_meta({'app': check}, {'app': 'x'}, KWARGS)
    assert calls == [('x', KWARGS)]


def test_value_callback_gets_none_for_an_absent_value() -> None:
    calls: List[Any] = []

    def check(value: Any, /, **kwargs: Any) -> bool:
        calls.append(value)
        return False

    assert not match_meta({'app': check}, {}, KWARGS)
    assert calls == [None]


def test_value_callback_gets_an_empty_string_as_is() -> None:
    calls: List[Any] = []

    def check(value: Any, /, **_: Any) -> bool:
        calls.append(value)
        return True

    match_value(check, '', present=True, kwargs=KWARGS)
    assert calls == ['']


@pytest.mark.parametrize('criterion, value, present, expected', [
    pytest.param(PRESENT, 'x', True, True, id='present-present'),
    pytest.param(PRESENT, None, False, False, id='present-absent'),
    pytest.param(ABSENT, None, False, True, id='absent-absent'),
    pytest.param(ABSENT, 'x', True, False, id='absent-present'),
    pytest.param(1, 1, True, True, id='literal-same'),
    pytest.param(1, 2, True, False, id='literal-different'),
    pytest.param({'a': 1}, {'a': 1}, True, True, id='structural-equality'),
])
def test_value_criteria(criterion: Any, value: Any, present: bool, expected: bool) -> None:
    assert match_value(criterion, value, present=present, kwargs=KWARGS) is expected


def test_callback_results_are_taken_as_booleans() -> None:
    assert match_value(lambda value, **_: 'truthy', 'x', present=True, kwargs=KWARGS) is True
    assert match_value(lambda value, **_: 0, 'x', present=True, kwargs=KWARGS) is False


@pytest.mark.parametrize('obj, path, expected', [
    pytest.param({'spec': {'field': 'x'}}, ('spec', 'field'), (True, 'x'), id='nested'),
    pytest.param({'spec': {'field': ''}}, ('spec', 'field'), (True, ''), id='empty-string-is-present'),
    pytest.param({'spec': {'field': 0}}, ('spec', 'field'), (True, 0), id='zero-is-present'),
    pytest.param({'spec': {'field': None}}, ('spec', 'field'), (False, None), id='null-is-absent'),
    pytest.param({'spec': {}}, ('spec', 'field'), (False, None), id='missing-key'),
    pytest.param({'spec': 'scalar'}, ('spec', 'field'), (False, None), id='non-mapping-parent'),
    pytest.param({}, ('spec', 'field'), (False, None), id='missing-parent'),
    pytest.param({'spec': {'a': 1}}, ('spec',), (True, {'a': 1}), id='mapping-value'),
])
def test_resolving_fields(obj: Any, path: Any, expected: Any) -> None:
    assert resolve_field(obj, path) == expected


def test_markers_repr_as_the_public_names() -> None:
    assert repr(PRESENT) == 'kopf.PRESENT'
    assert repr(ABSENT) == 'kopf.ABSENT'
