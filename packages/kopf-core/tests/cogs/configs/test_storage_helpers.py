"""The storages' key and essence helpers that Kopf's storages have too (used by custom storages)."""
import kopf


def test_safe_keys_replace_the_characters_not_allowed_in_annotation_names() -> None:
    assert kopf.AnnotationsProgressStorage.make_safe_key('parent/child<1>') == 'parent.child_1_'


def test_suffixes_are_short_stable_hashes() -> None:
    storage = kopf.AnnotationsDiffBaseStorage()
    suffix = storage.make_suffix('a-very-long-key')
    assert suffix == storage.make_suffix('a-very-long-key')
    assert suffix.startswith('-') and 2 <= len(suffix) <= 7
    assert suffix != storage.make_suffix('another-long-key')


def test_annotations_are_removed_from_an_essence() -> None:
    essence = {'metadata': {'annotations': {'a': '1', 'b': '2'}}, 'spec': {}}
    kopf.SmartProgressStorage.remove_annotations(essence, {'a', 'x'})
    assert essence == {'metadata': {'annotations': {'b': '2'}}, 'spec': {}}


def test_an_essence_without_such_annotations_is_left_as_is() -> None:
    annotations = {'b': '2'}
    essence = {'metadata': {'annotations': annotations}}
    kopf.StatusDiffBaseStorage.remove_annotations(essence, {'a'})
    assert essence['metadata']['annotations'] is annotations


def test_patch_takes_the_transformation_functions() -> None:
    def fn(body: kopf.RawBody) -> None:
        pass
    patch = kopf.Patch({'spec': {'x': 1}}, fns=[fn])
    assert patch.fns == [fn]
    assert kopf.Patch(patch).fns == [fn]
