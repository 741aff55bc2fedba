"""
Patches: the merge-patch content, the transformation functions, and the JSON-patch
operations computed from them for a given body. The bodies are plain dicts.
"""
import copy
import functools
import gc
import weakref
from collections.abc import Callable
from typing import Any, Dict

import pytest

from kopf._cogs.structs import patches


def add_finalizer(body: dict[str, Any], /, name: str = 'my-operator/cleanup') -> None:
    finalizers = body.setdefault('metadata', {}).setdefault('finalizers', [])
    if name not in finalizers:
        finalizers.append(name)


def remove_finalizer(body: dict[str, Any], /, name: str = 'my-operator/cleanup') -> None:
    finalizers = body.get('metadata', {}).get('finalizers', [])
    while name in finalizers:
        finalizers.remove(name)


def test_patches_are_dicts() -> None:
    patch = patches.Patch({'spec': {'x': 1}})
    assert isinstance(patch, dict)
    assert patch == {'spec': {'x': 1}}


def test_sections_are_created_on_writing() -> None:
    patch = patches.Patch()
    patch.spec['greeting'] = 'hello'
    patch.status['state'] = 'initialized'
    patch.meta.labels['label'] = 'value'
    patch.metadata.annotations['key'] = 'value'
    assert patch == {
        'spec': {'greeting': 'hello'},
        'status': {'state': 'initialized'},
        'metadata': {'labels': {'label': 'value'}, 'annotations': {'key': 'value'}},
    }


def test_sections_are_not_created_on_reading() -> None:
    patch = patches.Patch()
    assert dict(patch.spec) == {}
    assert 'x' not in patch.status
    assert dict(patch.meta.labels) == {}
    assert patch == {}
    assert not patch


def test_nones_are_kept_to_delete_the_fields_on_merging() -> None:
    patch = patches.Patch()
    patch.spec['obsoleteField'] = None
    assert patch == {'spec': {'obsoleteField': None}}


def test_deleting_from_a_section_removes_it_from_the_patch_with_empty_parents() -> None:
    patch = patches.Patch()
    patch.meta.annotations['key'] = 'value'
    del patch.meta.annotations['key']
    assert patch == {}


def test_deleting_an_absent_key_from_a_section_raises() -> None:
    patch = patches.Patch()
    with pytest.raises(KeyError):
        del patch.spec['absent']


def test_sections_follow_the_dict_content() -> None:
    patch = patches.Patch()
    patch['spec'] = {'x': 1}
    assert patch.spec['x'] == 1


def test_meta_and_metadata_are_the_same_section() -> None:
    patch = patches.Patch()
    assert patch.meta is patch.metadata


@pytest.mark.parametrize('content, fns, expected', [
    pytest.param({}, [], False, id='nothing'),
    pytest.param({'spec': {'x': 1}}, [], True, id='merge-content'),
    pytest.param({}, [add_finalizer], True, id='fns'),
    pytest.param({'spec': {'x': 1}}, [add_finalizer], True, id='both'),
])
def test_patches_are_true_if_they_have_anything_to_apply(
        content: dict[str, Any], fns: list[patches.PatchFn], expected: bool,
) -> None:
    patch = patches.Patch(content)
    patch.fns.extend(fns)
    assert bool(patch) is expected


def test_clearing_keeps_the_functions() -> None:
    patch = patches.Patch({'spec': {'x': 1}})
    patch.fns.append(add_finalizer)
    patch.clear()
    assert patch == {}
    assert patch.fns == [add_finalizer]
    assert patch


def test_merge_patches_are_detached_from_the_patch() -> None:
    patch = patches.Patch({'spec': {'x': 1}})
    patch.fns.append(add_finalizer)
    merge = patch.as_merge_patch()
    merge['spec']['x'] = 2
    assert merge == {'spec': {'x': 2}}
    assert type(merge) is dict
    assert patch == {'spec': {'x': 1}}


@pytest.mark.parametrize('copier', [
    pytest.param(copy.copy, id='copy'),
    pytest.param(copy.deepcopy, id='deepcopy'),
    pytest.param(patches.Patch, id='constructor'),
])
def test_copies_keep_the_content_and_the_functions(copier: Callable[[patches.Patch], patches.Patch]) -> None:
    patch = patches.Patch({'spec': {'x': 1}})
    patch.fns.append(add_finalizer)
    copied = copier(patch)
    assert copied == {'spec': {'x': 1}}
    assert copied.fns == [add_finalizer]
    assert copied.fns is not patch.fns


@pytest.mark.parametrize('target, patch, expected', [
    pytest.param({'a': 1}, {'b': 2}, {'a': 1, 'b': 2}, id='add'),
    pytest.param({'a': 1}, {'a': 2}, {'a': 2}, id='replace'),
    pytest.param({'a': 1, 'b': 2}, {'a': None}, {'b': 2}, id='delete'),
    pytest.param({'a': {'x': 1, 'y': 2}}, {'a': {'y': None, 'z': 3}}, {'a': {'x': 1, 'z': 3}}, id='nested'),
    pytest.param({'a': [1, 2]}, {'a': [3]}, {'a': [3]}, id='lists-replaced'),
    pytest.param({'a': 'x'}, {'a': {'b': None, 'c': 1}}, {'a': {'c': 1}}, id='non-dict-replaced-by-dict'),
])
def test_merge_patches_are_applied_as_rfc7386(
        target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any],
) -> None:
    original = copy.deepcopy(target)
    assert patches.apply_merge_patch(target, patch) == expected
    assert target == original


def test_merge_content_converts_to_json_patch_operations_for_a_body() -> None:
    body = {'metadata': {'labels': {'a': '1', 'b': '2'}}, 'spec': {'x': 1}}
    patch = patches.Patch({
        'metadata': {'labels': {'a': None, 'b': '3', 'c': '4', 'x/y': None}},
        'spec': {'x': {'nested': 1, 'gone': None}},
        'status': {'phase': 'done'},
    })
    assert patch.as_json_patch(body) == [
        {'op': 'remove', 'path': '/metadata/labels/a'},
        {'op': 'replace', 'path': '/metadata/labels/b', 'value': '3'},
        {'op': 'add', 'path': '/metadata/labels/c', 'value': '4'},
        {'op': 'replace', 'path': '/spec/x', 'value': {'nested': 1}},
        {'op': 'add', 'path': '/status', 'value': {'phase': 'done'}},
    ]


def test_merge_content_converts_against_the_body_given_at_creation() -> None:
    patch = patches.Patch({'spec': {'x': 2}}, body={'spec': {'x': 1}})
    assert patch.as_json_patch() == [{'op': 'replace', 'path': '/spec/x', 'value': 2}]


BODY: dict[str, Any] = {'metadata': {'name': 'n', 'resourceVersion': '123', 'finalizers': ['other']}, 'spec': {'x': 1}}


def test_functions_are_turned_into_operations_after_a_resource_version_test() -> None:
    ops = patches.build_json_patch(BODY, [add_finalizer])
    assert ops == [
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '123'},
        {'op': 'add', 'path': '/metadata/finalizers/-', 'value': 'my-operator/cleanup'},
    ]


def test_functions_get_a_deep_copy_of_the_body() -> None:
    body = copy.deepcopy(BODY)
    patches.build_json_patch(body, [add_finalizer, lambda b: b['spec'].clear()])
    assert body == BODY


def test_functions_changing_nothing_produce_no_operations_at_all() -> None:
    body = copy.deepcopy(BODY)
    body['metadata']['finalizers'].append('my-operator/cleanup')
    assert patches.build_json_patch(body, [add_finalizer]) == []


def test_no_functions_produce_no_operations() -> None:
    assert patches.build_json_patch(BODY, []) == []


def test_functions_are_applied_in_order_on_the_same_copy() -> None:
    ops = patches.build_json_patch(BODY, [add_finalizer, remove_finalizer])
    assert ops == []


def test_functions_recalculated_against_a_fresher_body_address_its_list() -> None:
    # A conflict: the first attempt was computed for an outdated body; the retry uses the fresh one.
    fresh = {'metadata': {'resourceVersion': '124', 'finalizers': ['other', 'my-operator/cleanup', 'third']}}
    ops = patches.build_json_patch(fresh, [remove_finalizer])
    assert ops == [
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '124'},
        {'op': 'remove', 'path': '/metadata/finalizers/1'},
    ]


def test_removing_all_copies_of_a_list_item_goes_from_the_end() -> None:
    body = {'metadata': {'resourceVersion': '1', 'finalizers': ['x', 'a', 'x', 'b', 'x']}}
    ops = patches.build_json_patch(body, [functools.partial(remove_finalizer, name='x')])
    assert ops == [
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '1'},
        {'op': 'remove', 'path': '/metadata/finalizers/4'},
        {'op': 'remove', 'path': '/metadata/finalizers/2'},
        {'op': 'remove', 'path': '/metadata/finalizers/0'},
    ]


def test_creating_an_absent_list_adds_it_as_a_whole() -> None:
    body = {'metadata': {'resourceVersion': '1'}}
    ops = patches.build_json_patch(body, [add_finalizer])
    assert ops[1:] == [{'op': 'add', 'path': '/metadata/finalizers', 'value': ['my-operator/cleanup']}]


def test_bodies_without_resource_versions_get_no_test_operation() -> None:
    ops = patches.build_json_patch({'spec': {}}, [lambda b: b['spec'].update(x=1)])
    assert ops == [{'op': 'add', 'path': '/spec/x', 'value': 1}]


def test_keys_are_escaped_in_the_operation_paths() -> None:
    def annotate(body: dict[str, Any]) -> None:
        body['metadata'].setdefault('annotations', {})['kopf.zalando.org/a~b'] = 'v'
    ops = patches.build_json_patch({'metadata': {'annotations': {}}}, [annotate])
    assert ops == [{'op': 'add', 'path': '/metadata/annotations/kopf.zalando.org~1a~0b', 'value': 'v'}]


@pytest.mark.parametrize('old, new, expected', [
    pytest.param(1, 2, [{'op': 'replace', 'path': '/spec/v', 'value': 2}], id='scalar'),
    pytest.param(1, True, [{'op': 'replace', 'path': '/spec/v', 'value': True}], id='int-to-bool'),
    pytest.param({'a': 1}, [1], [{'op': 'replace', 'path': '/spec/v', 'value': [1]}], id='dict-to-list'),
    pytest.param({'a': 1, 'b': 2}, {'a': 1}, [{'op': 'remove', 'path': '/spec/v/b'}], id='dict-key-removed'),
    pytest.param([{'n': 1}, {'n': 2}], [{'n': 1}, {'n': 3}],
                 [{'op': 'replace', 'path': '/spec/v/1/n', 'value': 3}], id='list-item-changed-inside'),
    pytest.param(['a', 'c'], ['a', 'b', 'c'],
                 [{'op': 'add', 'path': '/spec/v/1', 'value': 'b'}], id='list-item-inserted'),
    pytest.param(['a', 'b'], ['c'],
                 [{'op': 'remove', 'path': '/spec/v/1'}, {'op': 'remove', 'path': '/spec/v/0'},
                  {'op': 'add', 'path': '/spec/v/0', 'value': 'c'}], id='list-items-replaced'),
])
def test_value_changes_are_turned_into_minimal_operations(
        old: object, new: object, expected: list[dict[str, Any]],
) -> None:
    def transform(body: dict[str, Any]) -> None:
        body['spec']['v'] = copy.deepcopy(new)
    assert patches.build_json_patch({'spec': {'v': old}}, [transform]) == expected


def _apply_json_patch(body: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A minimal RFC 6902 applier for the operations produced here (add/remove/replace/test)."""
    body = copy.deepcopy(body)
    for op in ops:
        *parents, last = [p.replace('~1', '/').replace('~0', '~') for p in op['path'].split('/')[1:]]
        target: Any = body  # dicts or lists, as the path goes
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if op['op'] == 'test':
            assert target[last] == op['value']
        elif op['op'] == 'remove':
            del target[int(last) if isinstance(target, list) else last]
        elif op['op'] == 'add' and isinstance(target, list):
            target.insert(len(target) if last == '-' else int(last), op['value'])
        else:
            target[int(last) if isinstance(target, list) else last] = op['value']
    return body


@pytest.mark.parametrize('old, new', [
    pytest.param([1, 2, 3, 4, 5], [5, 3, 1], id='reordered'),
    pytest.param(['a', 'b', 'c'], ['x', 'a', 'y', 'c', 'z'], id='mixed'),
    pytest.param([{'a': 1}, {'b': [1, 2]}], [{'b': [2, 1]}, {'a': 2}, {'c': None}], id='dicts'),
    pytest.param([], ['a', 'b'], id='from-empty'),
    pytest.param(['a', 'b'], [], id='to-empty'),
])
def test_operations_reproduce_the_transformed_body(old: list[Any], new: list[Any]) -> None:
    body = {'metadata': {'resourceVersion': '1'}, 'spec': {'v': old, 'keep': True}}
    def transform(raw: dict[str, Any]) -> None:
        raw['spec']['v'] = copy.deepcopy(new)
    ops = patches.build_json_patch(body, [transform])
    assert _apply_json_patch(body, ops) == {'metadata': {'resourceVersion': '1'}, 'spec': {'v': new, 'keep': True}}


def test_a_patch_is_freed_by_reference_counting() -> None:
    gc.disable()
    try:
        patch = patches.Patch(body={'spec': {}})
        patch.spec['x'] = 1
        patch.meta.labels['a'] = 'b'
        freed = weakref.ref(patch)
        del patch
        assert freed() is None  # no reference cycle through its sections: the body it holds goes at once
    finally:
        gc.enable()


def test_a_section_outliving_its_patch_says_so() -> None:
    patch = patches.Patch()
    section = patch.spec
    del patch
    with pytest.raises(ReferenceError, match="keep the patch, not only its section"):
        section['x'] = 1


def test_sections_of_plain_dicts_keep_them() -> None:
    target: Dict[str, Any] = {}
    section = patches.PatchSection(target, ('spec',))
    section['x'] = 1
    assert target == {'spec': {'x': 1}}
