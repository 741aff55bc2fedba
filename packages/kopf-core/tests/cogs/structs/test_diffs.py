"""
Diffs of JSON-like values and their reduction to fields, as seen by handlers.
"""
from typing import TypeAlias

import pytest

from kopf._cogs.structs import dicts, diffs
from kopf._cogs.structs.diffs import DiffItem, DiffOperation

# Diffs are compared with plain tuples of (operation, path, old, new), as handlers often do.
PlainItem: TypeAlias = tuple[str, dicts.FieldPath, object, object]


def test_operations_are_strings() -> None:
    # The static checker sees enum members and strings as never equal; at runtime, str-based members are.
    assert DiffOperation.ADD == 'add'  # type: ignore[comparison-overlap]
    assert DiffOperation.CHANGE == 'change'  # type: ignore[comparison-overlap]
    assert DiffOperation.REMOVE == 'remove'  # type: ignore[comparison-overlap]
    assert str(DiffOperation.ADD) == 'add'
    assert repr(DiffOperation.ADD) == "'add'"


def test_items_expose_the_operation_as_op() -> None:
    item = DiffItem(DiffOperation.ADD, ('spec',), None, 1)
    assert item.op is DiffOperation.ADD
    assert item.operation is DiffOperation.ADD


def test_items_are_shown_as_plain_tuples() -> None:
    item = DiffItem(DiffOperation.ADD, ('spec',), None, 1)
    assert repr(item) == "('add', ('spec',), None, 1)"


def test_diffs_are_shown_as_tuples_of_tuples() -> None:
    d = diffs.diff({'a': 1}, {'a': 2})
    assert repr(d) == "(('change', ('a',), 1, 2),)"


@pytest.mark.parametrize('other', [
    pytest.param([('change', ('a',), 1, 2)], id='list-of-tuples'),
    pytest.param((('change', ('a',), 1, 2),), id='tuple-of-tuples'),
    pytest.param([['change', ['a'], 1, 2]], id='list-of-lists'),
    pytest.param([(DiffOperation.CHANGE, ('a',), 1, 2)], id='enums'),
])
def test_diffs_equal_plain_sequences_of_the_same_items(other: object) -> None:
    assert diffs.diff({'a': 1}, {'a': 2}) == other


@pytest.mark.parametrize('other', [
    pytest.param([], id='empty'),
    pytest.param([('add', ('a',), 1, 2)], id='other-op'),
    pytest.param([('change', ('b',), 1, 2)], id='other-field'),
    pytest.param('change', id='string'),
    pytest.param([1, 2], id='non-items'),
])
def test_diffs_differ_from_other_sequences(other: object) -> None:
    assert diffs.diff({'a': 1}, {'a': 2}) != other


def test_diffs_are_sequences() -> None:
    d = diffs.diff({'a': 1, 'b': 1}, {'a': 2, 'b': 2})
    assert len(d) == 2
    assert d[0] == ('change', ('a',), 1, 2)
    assert list(d[1:]) == [('change', ('b',), 1, 2)]


def test_equal_values_have_an_empty_diff() -> None:
    assert diffs.diff({'a': [1, {'b': 2}]}, {'a': [1, {'b': 2}]}) == []


@pytest.mark.parametrize('a, b, expected', [
    pytest.param(None, 1, [('add', (), None, 1)], id='none-to-value'),
    pytest.param(1, None, [('remove', (), 1, None)], id='value-to-none'),
    pytest.param(1, 2, [('change', (), 1, 2)], id='value-to-value'),
    pytest.param('x', {'a': 1}, [('change', (), 'x', {'a': 1})], id='scalar-to-dict'),
    pytest.param([1], [1, 2], [('change', (), [1], [1, 2])], id='lists-as-whole-values'),
])
def test_root_values_are_diffed_as_whole(a: object, b: object, expected: list[PlainItem]) -> None:
    assert diffs.diff(a, b) == expected


def test_dicts_are_diffed_recursively_with_the_manual_example() -> None:
    old = {'metadata': {'labels': {'label2': 'old-value', 'label3': 'old-value'}}, 'spec': {'size': '1G'}}
    new = {'metadata': {'labels': {'label1': 'new-value', 'label2': 'new-value'}}, 'spec': {'size': '2G'}}
    assert diffs.diff(old, new) == [
        ('add', ('metadata', 'labels', 'label1'), None, 'new-value'),
        ('change', ('metadata', 'labels', 'label2'), 'old-value', 'new-value'),
        ('remove', ('metadata', 'labels', 'label3'), 'old-value', None),
        ('change', ('spec', 'size'), '1G', '2G'),
    ]


def test_keys_going_from_none_to_a_value_are_added() -> None:
    assert diffs.diff({'a': None}, {'a': 1}) == [('add', ('a',), None, 1)]


def test_keys_going_from_a_value_to_none_are_removed() -> None:
    assert diffs.diff({'a': 1}, {'a': None}) == [('remove', ('a',), 1, None)]


def test_new_sub_dicts_are_added_as_a_whole() -> None:
    assert diffs.diff({}, {'spec': {'a': 1}}) == [('add', ('spec',), None, {'a': 1})]


def test_diffs_are_prefixed_with_the_path() -> None:
    assert diffs.diff(1, 2, path=('spec', 'x')) == [('change', ('spec', 'x'), 1, 2)]


@pytest.mark.parametrize('path, expected', [
    pytest.param((), [
        ('add', ('metadata', 'labels', 'label1'), None, 'new-value'),
        ('change', ('spec', 'size'), '1G', '2G'),
    ], id='root'),
    pytest.param(('metadata', 'labels'), [
        ('add', ('label1',), None, 'new-value'),
    ], id='labels'),
    pytest.param(('spec', 'size'), [
        ('change', (), '1G', '2G'),
    ], id='exact-field'),
    pytest.param(('spec', 'other'), [], id='unrelated-field'),
])
def test_reducing_relates_the_items_to_the_field(path: dicts.FieldPath, expected: list[PlainItem]) -> None:
    d = diffs.Diff([
        ('add', ('metadata', 'labels', 'label1'), None, 'new-value'),
        ('change', ('spec', 'size'), '1G', '2G'),
    ])
    assert diffs.reduce(d, path) == expected


def test_reducing_accepts_dotted_fields() -> None:
    d = diffs.Diff([('change', ('spec', 'size'), '1G', '2G')])
    assert diffs.reduce(d, 'spec.size') == [('change', (), '1G', '2G')]


@pytest.mark.parametrize('item, expected', [
    pytest.param(('add', ('spec',), None, {'struct': {'field': 1}}),
                 [('add', (), None, {'field': 1})], id='ancestor-added'),
    pytest.param(('remove', ('spec',), {'struct': {'field': 1}}, None),
                 [('remove', (), {'field': 1}, None)], id='ancestor-removed'),
    pytest.param(('change', ('spec',), {'struct': {'field': 1}}, {'struct': {'field': 2}}),
                 [('change', ('field',), 1, 2)], id='ancestor-changed'),
    pytest.param(('change', ('spec',), {'struct': 1, 'other': 1}, {'struct': 1, 'other': 2}),
                 [], id='ancestor-changed-elsewhere'),
    pytest.param(('change', ('spec',), 'string', {'struct': 1}),
                 [('add', (), None, 1)], id='ancestor-was-not-a-dict'),
])
def test_reducing_re_diffs_the_field_within_its_changed_ancestors(item: PlainItem, expected: list[PlainItem]) -> None:
    assert diffs.reduce(diffs.Diff([item]), 'spec.struct') == expected
