"""
Bodies as read-only live views over a raw dict; the raw dicts are real, nothing is mocked.
"""
import copy
import gc
import weakref
from typing import Any

import pytest

from kopf._cogs.structs import bodies

RAW = {
    'apiVersion': 'kopf.dev/v1',
    'kind': 'KopfExample',
    'metadata': {
        'name': 'kopf-example-1',
        'namespace': 'default',
        'uid': 'uid-1',
        'creationTimestamp': '2026-11-22T08:14:26Z',
        'deletionTimestamp': '2026-11-22T09:00:00Z',
        'labels': {'somelabel': 'somevalue'},
        'annotations': {'someannotation': 'somevalue'},
    },
    'spec': {'field': 'value'},
    'status': {'phase': 'done'},
}


def test_body_gives_the_raw_content() -> None:
    body = bodies.Body(RAW)
    assert body == RAW
    assert body['kind'] == 'KopfExample'


def test_body_is_read_only() -> None:
    body = bodies.Body({})
    with pytest.raises(TypeError):
        body['spec'] = {}  # type: ignore[index]


def test_body_is_shown_as_its_raw_dict() -> None:
    assert repr(bodies.Body({'spec': {}})) == "{'spec': {}}"


@pytest.mark.parametrize('attr, expected', [
    pytest.param('spec', {'field': 'value'}, id='spec'),
    pytest.param('status', {'phase': 'done'}, id='status'),
    pytest.param('meta', RAW['metadata'], id='meta'),
    pytest.param('metadata', RAW['metadata'], id='metadata'),
])
def test_body_stanzas_are_views_of_the_raw_stanzas(attr: str, expected: dict[str, Any]) -> None:
    body = bodies.Body(RAW)
    assert getattr(body, attr) == expected


def test_meta_and_metadata_are_the_same_view() -> None:
    body = bodies.Body(RAW)
    assert body.meta is body.metadata


@pytest.mark.parametrize('attr, expected', [
    pytest.param('uid', 'uid-1', id='uid'),
    pytest.param('name', 'kopf-example-1', id='name'),
    pytest.param('namespace', 'default', id='namespace'),
    pytest.param('creation_timestamp', '2026-11-22T08:14:26Z', id='creation_timestamp'),
    pytest.param('deletion_timestamp', '2026-11-22T09:00:00Z', id='deletion_timestamp'),
])
def test_meta_shortcuts_give_the_metadata_fields(attr: str, expected: str) -> None:
    assert getattr(bodies.Body(RAW).meta, attr) == expected


@pytest.mark.parametrize('attr', ['uid', 'name', 'namespace', 'creation_timestamp', 'deletion_timestamp'])
def test_meta_shortcuts_of_absent_fields_are_none(attr: str) -> None:
    assert getattr(bodies.Body({}).meta, attr) is None


def test_meta_labels_and_annotations_are_views() -> None:
    meta = bodies.Body(RAW).meta
    assert meta.labels == {'somelabel': 'somevalue'}
    assert meta.annotations == {'someannotation': 'somevalue'}


def test_absent_stanzas_are_empty() -> None:
    body = bodies.Body({})
    assert body.spec == {}
    assert body.status == {}
    assert body.meta.labels == {}
    assert body.meta.annotations == {}


def test_views_reflect_the_replacements_of_the_raw_body() -> None:
    body = bodies.Body({'spec': {'field': 'old'}, 'metadata': {'labels': {'a': 'old'}}})
    spec, labels = body.spec, body.meta.labels
    body._replace_with({'spec': {'field': 'new'}, 'metadata': {'labels': {'a': 'new'}}})
    assert spec['field'] == 'new'
    assert labels['a'] == 'new'
    assert body['spec'] == {'field': 'new'}


def test_views_reflect_the_in_place_changes_of_the_raw_body() -> None:
    raw: dict[str, Any] = {}
    body = bodies.Body(raw)
    raw['status'] = {'phase': 'new'}
    assert body.status == {'phase': 'new'}


def test_raw_bodies_are_taken_from_bodies_without_copying() -> None:
    raw: dict[str, Any] = {'spec': {}}
    assert bodies.as_raw(bodies.Body(raw)) is raw
    assert bodies.as_raw(raw) is raw



def test_a_body_is_freed_by_reference_counting_while_its_views_are_in_use() -> None:
    gc.disable()
    try:
        body = bodies.Body(copy.deepcopy(RAW))
        labels, spec = body.meta.labels, body.spec
        freed = weakref.ref(body)
        del body
        assert freed() is None  # no reference cycle: gone at once, not at the collector's next pass
        assert labels == {'somelabel': 'somevalue'}  # the views live on with the source
        assert spec == copy.deepcopy(RAW)['spec']
    finally:
        gc.enable()


def test_views_of_views_follow_the_replaced_source() -> None:
    body = bodies.Body({'metadata': {'labels': {'a': 'b'}}})
    labels = bodies.Meta(body).labels
    body._replace_with({'metadata': {'labels': {'c': 'd'}}})
    assert labels == {'c': 'd'}
    assert body.meta.labels == {'c': 'd'}
