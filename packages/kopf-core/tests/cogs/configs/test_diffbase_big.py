"""
Diff-base storages of big objects: Kopf's form while it fits, packed when only that fits, nothing otherwise.

The limits are Kubernetes': 256 KiB for all annotations (keys and values, in bytes),
of which the diff-base leaves 16 KiB for the progress records, and the object's
size under etcd's request limit. The boundaries are tested to the byte.
"""
import base64
import gzip
import json
import logging
import os
import re
from typing import Any, Dict, List, Optional

import pytest

from kopf._cogs.configs import diffbase, packing
from kopf._cogs.structs import bodies, patches

PLAIN_KEY = 'kopf.zalando.org/last-handled-configuration'
PACKED_KEY = 'kopf.zalando.org/last-handled-configuration-packed'
ANNOTATIONS_BUDGET = packing.ANNOTATIONS_SIZE_LIMIT - packing.ANNOTATIONS_HEADROOM
ESSENCE: Any = {'spec': {'field': 'value'}}
ESSENCE_JSON = '{"spec":{"field":"value"}}'


def big_essence(size: int) -> Any:
    """Repetitive, as big specs usually are: it packs many times smaller."""
    return {'spec': {'items': [{'name': f'item-{i}', 'image': 'registry.example.com/app:1.2.3'}
                               for i in range(size // 60)]}}


def random_essence(size: int) -> Any:
    """Incompressible: packed, it is as big as it is."""
    return {'spec': {'blob': base64.b64encode(os.urandom(size * 3 // 4)).decode()}}


# Big enough to pack smaller (tiny values grow when packed: ESSENCE's 27 bytes would take 87).
MID_ESSENCE = big_essence(8 * 1024)
MID_PLAIN = json.dumps(MID_ESSENCE, separators=(',', ':')) + '\n'


def make_body(annotations: Optional[Dict[str, str]] = None, **fields: Any) -> bodies.Body:
    return bodies.Body({'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
                        'metadata': {'name': 'obj', 'namespace': 'ns', 'annotations': annotations or {}}, **fields})


def store(storage: diffbase.DiffBaseStorage, body: bodies.Body, essence: Any) -> tuple[Any, List[packing.Placement]]:
    patch = patches.Patch()
    with packing.collecting() as placements:
        storage.store(body=body, patch=patch, essence=essence)
    return dict(patch), placements


def unpacked(value: str) -> Any:
    """As any user can decode it: the header, then gzip in base64."""
    assert value.startswith('v1:gzip+base64:')
    return json.loads(gzip.decompress(base64.b64decode(value[len('v1:gzip+base64:'):])))


def filler_for(annotations_total: int, value: str) -> Dict[str, str]:
    """Another annotation, sized so that all annotations with the diff-base make the total."""
    room = annotations_total - len(PLAIN_KEY) - len(value) - len('someone/else')
    return {'someone/else': 'x' * room}


# Annotations: the boundaries.

def test_diffbase_exactly_at_the_annotations_budget_is_in_kopfs_form() -> None:
    body = make_body(filler_for(ANNOTATIONS_BUDGET, MID_PLAIN))
    patch, placements = store(diffbase.AnnotationsDiffBaseStorage(), body, MID_ESSENCE)
    assert patch == {'metadata': {'annotations': {PLAIN_KEY: MID_PLAIN}}}  # Kopf's bytes
    assert [(p.form, p.level) for p in placements] == [(packing.Form.PLAIN, None)]  # nothing to say


def test_diffbase_one_byte_over_the_annotations_budget_is_packed() -> None:
    body = make_body(filler_for(ANNOTATIONS_BUDGET + 1, MID_PLAIN))
    patch, placements = store(diffbase.AnnotationsDiffBaseStorage(), body, MID_ESSENCE)
    assert list(patch['metadata']['annotations']) == [PACKED_KEY]  # no plain one: nothing to remove
    assert unpacked(patch['metadata']['annotations'][PACKED_KEY]) == MID_ESSENCE
    assert [(p.form, p.level) for p in placements] == [(packing.Form.PACKED, logging.INFO)]
    assert re.fullmatch(
        r"The last-handled configuration \(8\.0 KiB\) exceeds the room in the annotations \(256 KiB for all of "
        r"them, 16 KiB of it kept for the progress\): it is stored compressed \(\d+ bytes\) in the annotation "
        r"kopf\.zalando\.org/last-handled-configuration-packed\.", placements[0].message)


def test_annotations_are_counted_in_bytes_keys_included() -> None:
    # 'ü' is 2 bytes: the same number of characters is one byte over the budget.
    body = make_body(filler_for(ANNOTATIONS_BUDGET, MID_PLAIN))
    body_annotations = dict(body.metadata.annotations)
    body_annotations['someone/else'] = 'ü' + body_annotations['someone/else'][1:]
    patch, _ = store(diffbase.AnnotationsDiffBaseStorage(), make_body(body_annotations), MID_ESSENCE)
    assert list(patch['metadata']['annotations']) == [PACKED_KEY]


def test_annotations_that_the_same_patch_removes_or_adds_are_counted_as_patched() -> None:
    body = make_body(filler_for(ANNOTATIONS_BUDGET + 100, MID_PLAIN))
    storage = diffbase.AnnotationsDiffBaseStorage()
    patch = patches.Patch()
    patch.meta.annotations['someone/else'] = None  # e.g. by a handler
    storage.store(body=body, patch=patch, essence=MID_ESSENCE)
    assert patch.meta.annotations[PLAIN_KEY] == MID_PLAIN
    patch = patches.Patch()
    patch.meta.annotations['someone/more'] = 'y' * 100
    storage.store(body=make_body(filler_for(ANNOTATIONS_BUDGET, MID_PLAIN)), patch=patch, essence=MID_ESSENCE)
    assert PACKED_KEY in patch.meta.annotations


def test_a_big_diffbase_is_packed_many_times_smaller() -> None:
    essence = big_essence(1024 * 1024)
    patch, placements = store(diffbase.AnnotationsDiffBaseStorage(), make_body(), essence)
    value = patch['metadata']['annotations'][PACKED_KEY]
    assert len(value) < 64 * 1024 and unpacked(value) == essence
    assert placements[0].size > 1024 * 1024 and placements[0].packed_size == len(value)


def test_packing_is_deterministic_and_an_unchanged_packed_diffbase_is_not_patched() -> None:
    essence = big_essence(300 * 1024)
    storage = diffbase.AnnotationsDiffBaseStorage()
    patch, _ = store(storage, make_body(), essence)
    value = patch['metadata']['annotations'][PACKED_KEY]
    assert store(storage, make_body(), essence)[0]['metadata']['annotations'][PACKED_KEY] == value
    patch, placements = store(storage, make_body({PACKED_KEY: value}), essence)
    assert patch == {}
    assert [(p.form, p.level) for p in placements] == [(packing.Form.PACKED, logging.DEBUG)]  # no news


# Too big even packed.

def test_incompressible_diffbase_over_the_annotations_is_not_stored_and_said_so() -> None:
    patch, placements = store(diffbase.AnnotationsDiffBaseStorage(), make_body(), random_essence(300 * 1024))
    assert patch == {}  # nothing that the API server would refuse
    [placement] = placements
    assert placement.form == packing.Form.UNSTORED and placement.level == logging.WARNING
    assert placement.message.startswith("The last-handled configuration (300.0 KiB, 30")  # 300-310 KiB packed
    assert placement.message.endswith(
        " KiB compressed) exceeds the room in the annotations (256 KiB for all of them, 16 KiB of it kept for the "
        "progress) even compressed: it is not stored in the annotations, only remembered until the operator exits; "
        "after a restart, the object is handled as a new one (its creation handlers run again). To fix it, exclude "
        "the big fields from it (ignored_fields= of the diff-base storage), or store it in the status "
        "(kopf.StatusDiffBaseStorage), where only the object's size limits it.")


def test_incompressible_diffbase_leaves_the_last_stored_one_as_it_is() -> None:
    body = make_body({PLAIN_KEY: ESSENCE_JSON + '\n'})
    storage = diffbase.AnnotationsDiffBaseStorage()
    patch, placements = store(storage, body, random_essence(300 * 1024))
    assert patch == {}
    assert storage.fetch(body=body) == ESSENCE  # the last state that could be stored
    assert "after a restart, the object is handled as changed since its last stored state." in placements[0].message


def test_incompressible_diffbase_fits_the_status_if_the_object_has_room() -> None:
    essence = random_essence(300 * 1024)
    patch, placements = store(diffbase.StatusDiffBaseStorage(), make_body(), essence)
    assert json.loads(patch['status']['kopf']['last-handled-configuration']) == essence  # Kopf's form
    assert placements[0].form == packing.Form.PLAIN


# Status: the object's size is the limit.

def status_body(object_size: int, value: str) -> bodies.Body:
    """A body whose size with the plain diff-base stored in its status is exactly as given."""
    def make(filler: int) -> bodies.Body:
        return make_body(spec={'data': 'x' * filler}, status={'kopf': {'other': 'v'}})
    base = packing.json_size(dict(make(0)))
    entry = packing.json_size('last-handled-configuration') + packing.json_size(value) + 2  # ,"key":"value"
    return make(object_size - base - entry)


def test_status_diffbase_exactly_at_the_object_limit_is_in_kopfs_form() -> None:
    plain = MID_PLAIN.rstrip('\n')
    body = status_body(packing.OBJECT_SIZE_LIMIT, plain)
    patch, placements = store(diffbase.StatusDiffBaseStorage(), body, MID_ESSENCE)
    assert patch == {'status': {'kopf': {'last-handled-configuration': plain}}}
    merged = bodies.as_raw(body) | {'status': {'kopf': {'other': 'v', 'last-handled-configuration': plain}}}
    assert packing.json_size(merged) == packing.OBJECT_SIZE_LIMIT  # the boundary is real, to the byte
    assert placements[0].form == packing.Form.PLAIN


def test_status_diffbase_one_byte_over_the_object_limit_is_packed() -> None:
    body = status_body(packing.OBJECT_SIZE_LIMIT + 1, MID_PLAIN.rstrip('\n'))
    patch, placements = store(diffbase.StatusDiffBaseStorage(), body, MID_ESSENCE)
    assert list(patch['status']['kopf']) == ['last-handled-configuration-packed']
    assert unpacked(patch['status']['kopf']['last-handled-configuration-packed']) == MID_ESSENCE
    assert placements[0].where == "the field status.kopf.last-handled-configuration-packed"
    assert "exceeds the room in the object (1.4 MiB for all of it, under etcd's request limit of 1.5 MiB)" \
        in placements[0].message


def test_annotations_diffbase_is_limited_by_the_object_too() -> None:
    body = make_body(spec={'data': 'x' * (packing.OBJECT_SIZE_LIMIT - 1000)})
    patch, placements = store(diffbase.AnnotationsDiffBaseStorage(), body, random_essence(100 * 1024))
    assert patch == {}
    assert "exceeds the room in the object" in placements[0].message


def test_incompressible_big_diffbase_is_not_stored_in_the_status_of_a_big_object() -> None:
    essence = random_essence(1024 * 1024)
    body = make_body(spec=essence['spec'])
    patch, placements = store(diffbase.StatusDiffBaseStorage(), body, essence)
    assert patch == {}
    assert placements[0].form == packing.Form.UNSTORED
    assert "it is not stored in the status," in placements[0].message
    assert placements[0].message.endswith("To fix it, exclude the big fields from it "
                                          "(ignored_fields= of the diff-base storage).")  # not the status again


# Reading back each form.

@pytest.mark.parametrize('annotations', [
    pytest.param({PLAIN_KEY: ESSENCE_JSON + '\n'}, id='kopf'),
    pytest.param({PACKED_KEY: packing.pack(ESSENCE_JSON + '\n')}, id='packed'),
    pytest.param({PLAIN_KEY: ESSENCE_JSON + '\n', PACKED_KEY: packing.pack('{"spec":{}}')}, id='kopf-first'),
])
def test_annotations_diffbase_is_read_back_from_each_form(annotations: Dict[str, str]) -> None:
    assert diffbase.AnnotationsDiffBaseStorage().fetch(body=make_body(annotations)) == ESSENCE


@pytest.mark.parametrize('kopf_status', [
    pytest.param({'last-handled-configuration': ESSENCE_JSON}, id='kopf'),
    pytest.param({'last-handled-configuration-packed': packing.pack(ESSENCE_JSON)}, id='packed'),
])
def test_status_diffbase_is_read_back_from_each_form(kopf_status: Dict[str, str]) -> None:
    assert diffbase.StatusDiffBaseStorage().fetch(body=make_body(status={'kopf': kopf_status})) == ESSENCE


@pytest.mark.parametrize('value', [
    pytest.param('v2:zstd+base64:KLUv/QBYaQAA', id='unknown-version'),
    pytest.param('v1:gzip+base64:not base64!', id='not-base64'),
    pytest.param(packing.pack(ESSENCE_JSON)[:-8], id='truncated'),
    pytest.param(packing.PACKED_HEADER + base64.b64encode(gzip.compress(b'x' * (17 << 20))).decode(), id='bomb'),
    pytest.param(packing.pack('not json'), id='not-json'),
])
def test_unreadable_packed_diffbase_is_no_diffbase(value: str) -> None:
    assert diffbase.AnnotationsDiffBaseStorage().fetch(body=make_body({PACKED_KEY: value})) is None


def test_own_packed_annotation_is_not_a_part_of_the_essence() -> None:
    storage = diffbase.AnnotationsDiffBaseStorage(prefix='my-op.example.com')
    body = make_body({'my-op.example.com/last-handled-configuration-packed': packing.pack('{}'), 'a/b': 'c'})
    assert storage.build(body=body) == {'metadata': {'annotations': {'a/b': 'c'}}}


# Moving between the forms: from Kopf's, and back to it.

def test_object_handled_by_kopf_continues_and_its_diffbase_moves_when_it_grows() -> None:
    body = make_body({PLAIN_KEY: ESSENCE_JSON + '\n'})  # as Kopf has left it
    storage = diffbase.AnnotationsDiffBaseStorage()
    assert storage.fetch(body=body) == ESSENCE
    essence = big_essence(1024 * 1024)
    patch, placements = store(storage, body, essence)
    assert patch['metadata']['annotations'][PLAIN_KEY] is None  # removed: it would be read first
    assert unpacked(patch['metadata']['annotations'][PACKED_KEY]) == essence
    assert [(p.form, p.previous, p.level) for p in placements] == [(packing.Form.PACKED, packing.Form.PLAIN,
                                                                    logging.INFO)]


def test_diffbase_that_fits_again_is_stored_in_kopfs_form_and_the_packed_one_removed() -> None:
    body = make_body({PACKED_KEY: packing.pack(json.dumps(big_essence(1024 * 1024)) + '\n')})
    patch, placements = store(diffbase.AnnotationsDiffBaseStorage(), body, ESSENCE)
    assert patch == {'metadata': {'annotations': {PLAIN_KEY: ESSENCE_JSON + '\n', PACKED_KEY: None}}}
    assert placements[0].level == logging.INFO
    assert placements[0].message == (f"The last-handled configuration (27 bytes) fits again: "
                                     f"it is stored as usual in the annotation {PLAIN_KEY}.")


def test_status_diffbase_that_fits_again_removes_the_packed_field() -> None:
    body = make_body(status={'kopf': {'last-handled-configuration-packed': packing.pack('{}')}})
    patch, _ = store(diffbase.StatusDiffBaseStorage(), body, ESSENCE)
    assert patch == {'status': {'kopf': {'last-handled-configuration': ESSENCE_JSON,
                                         'last-handled-configuration-packed': None}}}


def test_long_keys_are_packed_under_both_generations_of_keys() -> None:
    storage = diffbase.AnnotationsDiffBaseStorage(prefix='operator.with.a.very.long.domain.example.com',
                                                  key='last-handled-configuration-of-this-operator')
    patch, _ = store(storage, make_body(), big_essence(300 * 1024))
    keys = storage.make_keys(storage.packed_key)
    assert len(keys) == 2 and sorted(patch['metadata']['annotations']) == sorted(keys)
    assert storage.fetch(body=make_body(patch['metadata']['annotations'])) == big_essence(300 * 1024)


def test_multi_storage_places_in_each_storage() -> None:
    storage = diffbase.MultiDiffBaseStorage([diffbase.StatusDiffBaseStorage(), diffbase.AnnotationsDiffBaseStorage()])
    essence = big_essence(300 * 1024)
    patch, placements = store(storage, make_body(), essence)
    assert [p.form for p in placements] == [packing.Form.PLAIN, packing.Form.PACKED]
    assert json.loads(patch['status']['kopf']['last-handled-configuration']) == essence
    assert unpacked(patch['metadata']['annotations'][PACKED_KEY]) == essence


def test_objects_with_null_annotations_are_measured() -> None:
    body = bodies.Body({'metadata': {'name': 'obj', 'annotations': None}, 'spec': {}})
    patch, _ = store(diffbase.AnnotationsDiffBaseStorage(), body, ESSENCE)
    assert patch == {'metadata': {'annotations': {PLAIN_KEY: ESSENCE_JSON + '\n'}}}


def test_placements_are_not_collected_outside_of_a_collector() -> None:
    patch = patches.Patch()
    diffbase.AnnotationsDiffBaseStorage().store(body=make_body(), patch=patch, essence=big_essence(300 * 1024))
    assert PACKED_KEY in patch.meta.annotations


# The sizes.

@pytest.mark.parametrize('base, patch', [
    ({'a': 1, 'b': {'c': 'd'}}, {'b': {'c': None, 'e': 'ü'}, 'f': [1, 2]}),
    ({'a': 'x'}, {'a': None}),
    ({'a': 'x'}, {'a': {'b': None, 'c': 1}}),
    ({}, {'m': {'n': {}}}),
])
def test_merged_size_is_the_size_of_the_merged_json(base: Any, patch: Any) -> None:
    def merge(target: Any, changes: Any) -> Any:
        if not isinstance(changes, dict):
            return changes
        result = dict(target) if isinstance(target, dict) else {}
        for key, value in changes.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = merge(result.get(key), value)
        return result
    assert packing.merged_size(base, patch) == packing.json_size(merge(base, patch))
