"""
The nested-dict helpers: plain dicts in, plain values out; nothing is mocked.
"""
from typing import Any

import pytest

from kopf._cogs.structs import dicts


@pytest.mark.parametrize('field, expected', [
    pytest.param(None, (), id='none'),
    pytest.param('', (), id='empty-string'),
    pytest.param('spec', ('spec',), id='single'),
    pytest.param('spec.field', ('spec', 'field'), id='dotted'),
    pytest.param(('metadata', 'annotations', 'a.b/c'), ('metadata', 'annotations', 'a.b/c'), id='tuple'),
    pytest.param(['spec', 'field'], ('spec', 'field'), id='list'),
])
def test_fields_are_parsed_into_tuples(field: Any, expected: dicts.FieldPath) -> None:
    assert dicts.parse_field(field) == expected


def test_fields_of_unsupported_types_are_rejected() -> None:
    with pytest.raises(ValueError):
        dicts.parse_field(123)  # type: ignore[arg-type]


def test_resolving_finds_nested_values() -> None:
    assert dicts.resolve({'spec': {'field': 'value'}}, 'spec.field') == 'value'


def test_resolving_the_root_gives_the_dict_itself() -> None:
    d: dict[str, Any] = {'spec': {}}
    assert dicts.resolve(d, None) is d


def test_resolving_a_missing_key_without_a_default_raises() -> None:
    with pytest.raises(KeyError):
        dicts.resolve({'spec': {}}, 'spec.field')


def test_resolving_a_missing_key_with_a_default_gives_the_default() -> None:
    assert dicts.resolve({'spec': {}}, 'spec.field', 'dflt') == 'dflt'


def test_resolving_through_none_assumes_it_empty_if_asked() -> None:
    assert dicts.resolve({'status': None}, 'status.field', 'dflt', assume_empty=True) == 'dflt'


def test_resolving_through_a_non_dict_raises_a_type_error() -> None:
    with pytest.raises(TypeError):
        dicts.resolve({'spec': 'string'}, 'spec.field', 'dflt')


def test_resolving_through_a_non_dict_gives_the_default_if_ignored() -> None:
    assert dicts.resolve({'spec': 'string'}, 'spec.field', 'dflt', ignore_wrong=True) == 'dflt'


def test_ensuring_creates_the_intermediate_dicts() -> None:
    d: dict[str, Any] = {'spec': {'other': 1}}
    dicts.ensure(d, 'spec.nested.field', 'value')
    assert d == {'spec': {'other': 1, 'nested': {'field': 'value'}}}


def test_ensuring_replaces_nones_on_the_path_with_dicts() -> None:
    d: dict[str, Any] = {'status': None}
    dicts.ensure(d, ('status', 'field'), 'value')
    assert d == {'status': {'field': 'value'}}


def test_ensuring_into_a_non_dict_is_refused() -> None:
    with pytest.raises(TypeError):
        dicts.ensure({'spec': 'string'}, 'spec.field', 'value')


def test_ensuring_the_root_is_refused() -> None:
    with pytest.raises(ValueError):
        dicts.ensure({}, None, 'value')


def test_removing_deletes_the_nested_key_only() -> None:
    d = {'spec': {'field': 'value', 'other': 1}}
    dicts.remove(d, 'spec.field')
    assert d == {'spec': {'other': 1}}


def test_removing_keeps_the_empty_parents_by_default() -> None:
    d: dict[str, Any] = {'status': {'kopf': {'progress': {}}}}
    dicts.remove(d, 'status.kopf.progress')
    assert d == {'status': {'kopf': {}}}


def test_removing_with_pruning_removes_the_empty_parents() -> None:
    d: dict[str, Any] = {'spec': {}, 'status': {'kopf': {'progress': {}}}}
    dicts.remove(d, 'status.kopf.progress', prune=True)
    assert d == {'spec': {}}


def test_removing_with_pruning_keeps_the_non_empty_parents() -> None:
    d = {'status': {'kopf': {'progress': {}}, 'other': 1}}
    dicts.remove(d, 'status.kopf.progress', prune=True)
    assert d == {'status': {'other': 1}}


@pytest.mark.parametrize('d', [
    pytest.param({}, id='no-parent'),
    pytest.param({'spec': {}}, id='no-key'),
    pytest.param({'spec': 'string'}, id='non-dict-parent'),
])
def test_removing_a_missing_key_is_ignored(d: dict[str, Any]) -> None:
    before = dict(d)
    dicts.remove(d, 'spec.field')
    assert d == before


def test_cherrypicking_copies_only_the_present_fields() -> None:
    src = {'spec': {'a': 1, 'b': 2}, 'status': {'phase': 'x'}}
    dst: dict[str, Any] = {'spec': {'a': 1}}
    dicts.cherrypick(src=src, dst=dst, fields=['status.phase', 'status.absent', 'spec.b'])
    assert dst == {'spec': {'a': 1, 'b': 2}, 'status': {'phase': 'x'}}


def test_cherrypicking_applies_the_picker_to_the_values() -> None:
    src = {'spec': {'items': [1]}}
    dst: dict[str, Any] = {}
    dicts.cherrypick(src=src, dst=dst, fields=['spec.items'], picker=list)
    assert dst == {'spec': {'items': [1]}}
    assert dst['spec']['items'] is not src['spec']['items']


def test_walking_a_single_dict_yields_it() -> None:
    obj = {'kind': 'Job'}
    assert list(dicts.walk(obj)) == [obj]


def test_walking_a_list_yields_its_dicts() -> None:
    objs = [{'kind': 'Job'}, {'kind': 'Pod'}]
    assert list(dicts.walk(objs)) == objs


def test_walking_yields_only_the_existing_nested_dicts() -> None:
    job = {'kind': 'Job'}
    deployment: dict[str, Any] = {'kind': 'Deployment', 'spec': {'template': {}}}
    result = list(dicts.walk([job, deployment], nested=['spec.template']))
    assert result == [job, deployment, {}]
    assert result[2] is deployment['spec']['template']


def test_mapping_views_show_the_sub_dict() -> None:
    view: dicts.MappingView[str, Any] = dicts.MappingView({'spec': {'field': 'value'}}, ('spec',))
    assert dict(view) == {'field': 'value'}
    assert view['field'] == 'value'
    assert len(view) == 1


@pytest.mark.parametrize('source', [
    pytest.param({}, id='absent'),
    pytest.param({'spec': None}, id='none'),
    pytest.param({'spec': 'string'}, id='non-dict'),
])
def test_mapping_views_of_missing_sub_dicts_are_empty(source: dict[str, Any]) -> None:
    view: dicts.MappingView[str, Any] = dicts.MappingView(source, ('spec',))
    assert dict(view) == {}


def test_mapping_views_follow_the_changes_of_the_source() -> None:
    source: dict[str, Any] = {}
    view: dicts.MappingView[str, Any] = dicts.MappingView(source, ('spec',))
    source['spec'] = {'field': 'value'}
    assert dict(view) == {'field': 'value'}


def test_mapping_views_are_read_only() -> None:
    view: dicts.MappingView[str, Any] = dicts.MappingView({'spec': {}}, ('spec',))
    with pytest.raises(TypeError):
        view['field'] = 'value'  # type: ignore[index]


def test_replaceable_views_are_followed_by_the_nested_views() -> None:
    root: dicts.ReplaceableMappingView[str, Any] = dicts.ReplaceableMappingView({'spec': {'field': 'old'}})
    nested: dicts.MappingView[str, Any] = dicts.MappingView(root, ('spec',))
    root._replace_with({'spec': {'field': 'new'}})
    assert nested['field'] == 'new'


def test_mapping_views_are_shown_as_dicts() -> None:
    view: dicts.MappingView[str, Any] = dicts.MappingView({'spec': {'field': 'value'}}, ('spec',))
    assert repr(view) == "{'field': 'value'}"
