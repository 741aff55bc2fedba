"""
Diff-base storages: building the essences from bodies, storing and fetching them,
byte-for-byte as upstream Kopf (the example confirmed against it).
"""
from typing import Any

import pytest

from kopf._cogs.configs import diffbase
from kopf._cogs.structs import bodies, dicts, patches

RAW = {
    'apiVersion': 'kopf.dev/v1',
    'kind': 'KopfExample',
    'metadata': {
        'name': 'kopf-example-1',
        'namespace': 'default',
        'uid': 'uid-1',
        'resourceVersion': '123',
        'labels': {'app': 'x'},
        'annotations': {
            'someone/else': 'v',
            'kopf.zalando.org/create_fn': '{}',
            'kopf.zalando.org/last-handled-configuration': '{}\n',
            'kubectl.kubernetes.io/last-applied-configuration': '{}',
        },
    },
    'spec': {'field': 'value', 'items': ['a']},
    'status': {'phase': 'done', 'kopf': {'progress': {'fn': {}}}},
}
ENCODED = (
    '{"spec":{"field":"value","items":["a"]},'
    '"metadata":{"labels":{"app":"x"},"annotations":{"someone/else":"v"}}}\n'
)


@pytest.fixture()
def storage() -> diffbase.AnnotationsDiffBaseStorage:
    return diffbase.AnnotationsDiffBaseStorage()


def test_essences_keep_the_meaningful_fields_in_the_confirmed_order(
        storage: diffbase.AnnotationsDiffBaseStorage,
) -> None:
    essence = storage.build(body=bodies.Body(RAW))
    assert essence == {
        'spec': {'field': 'value', 'items': ['a']},
        'metadata': {'labels': {'app': 'x'}, 'annotations': {'someone/else': 'v'}},
    }
    assert list(essence) == ['spec', 'metadata']


def test_essences_are_stored_as_the_confirmed_example(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    body = bodies.Body(RAW)
    patch = patches.Patch()
    storage.store(body=body, patch=patch, essence=storage.build(body=body))
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': ENCODED}}}


def test_essences_are_detached_from_the_bodies(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    raw = {'spec': {'items': ['a']}, 'metadata': {'labels': {'a': 'b'}}}
    essence = storage.build(body=bodies.Body(raw))
    essence['spec']['items'].append('b')
    essence['metadata']['labels']['c'] = 'd'
    assert raw == {'spec': {'items': ['a']}, 'metadata': {'labels': {'a': 'b'}}}


def test_essences_keep_other_top_level_fields_before_the_metadata(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    raw = {'kind': 'ConfigMap', 'metadata': {'labels': {'a': 'b'}}, 'data': {'k': 'v'}, 'binaryData': {}}
    essence = storage.build(body=bodies.Body(raw))
    assert essence == {'data': {'k': 'v'}, 'binaryData': {}, 'metadata': {'labels': {'a': 'b'}}}
    assert list(essence) == ['data', 'binaryData', 'metadata']


def test_essences_keep_empty_specs_but_not_empty_metadata(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    raw = {'metadata': {'labels': {}, 'annotations': {'kopf.zalando.org/fn': '{}'}}, 'spec': {}, 'status': {}}
    assert storage.build(body=bodies.Body(raw)) == {'spec': {}}


@pytest.mark.parametrize('annotation', [
    pytest.param('kubectl.kubernetes.io/last-applied-configuration', id='kubectl'),
    pytest.param('kopf.zalando.org/anything', id='kopf-domain'),
    pytest.param('my-op.kopf.zalando.org/anything', id='kopf-subdomain'),
    pytest.param('my-op.example.com/anything', id='kopf-managed-prefix'),
    pytest.param('my-op.example.com/kopf-managed', id='kopf-managed-marker'),
])
def test_essences_drop_the_system_annotations(storage: diffbase.AnnotationsDiffBaseStorage, annotation: str) -> None:
    raw = {'metadata': {'annotations': {
        annotation: 'x', 'my-op.example.com/kopf-managed': 'yes', 'someone/else': 'v',
    }}}
    essence = storage.build(body=bodies.Body(raw))
    assert essence == {'metadata': {'annotations': {'someone/else': 'v'}}}


@pytest.mark.parametrize('annotation', [
    pytest.param('notkopf.zalando.org/x', id='similar-domain'),
    pytest.param('kopf-managed', id='unprefixed'),
    pytest.param('example.com/x', id='other-prefix'),
])
def test_essences_keep_the_users_annotations(storage: diffbase.AnnotationsDiffBaseStorage, annotation: str) -> None:
    essence = storage.build(body=bodies.Body({'metadata': {'annotations': {annotation: 'x'}}}))
    assert essence == {'metadata': {'annotations': {annotation: 'x'}}}


def test_essences_drop_the_own_keys_with_custom_prefixes() -> None:
    storage = diffbase.AnnotationsDiffBaseStorage(prefix='my-op.example.com', key='diff-base')
    raw = {'metadata': {'annotations': {'my-op.example.com/diff-base': '{}', 'my-op.example.com/other': 'x'}}}
    assert storage.build(body=bodies.Body(raw)) == {'metadata': {'annotations': {'my-op.example.com/other': 'x'}}}


@pytest.mark.parametrize('extra_fields, expected_status', [
    pytest.param(['status.phase'], {'phase': 'done'}, id='dotted'),
    pytest.param([('status', 'phase')], {'phase': 'done'}, id='tuple'),
    pytest.param(['status.absent'], None, id='absent'),
])
def test_essences_keep_the_extra_fields_of_the_handlers(
        storage: diffbase.AnnotationsDiffBaseStorage,
        extra_fields: list[dicts.FieldSpec],
        expected_status: dict[str, Any] | None,
) -> None:
    essence = storage.build(body=bodies.Body(RAW), extra_fields=extra_fields)
    assert essence.get('status') == expected_status


def test_essences_put_the_extra_fields_at_the_end(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    essence = storage.build(body=bodies.Body(RAW), extra_fields=['status.phase'])
    assert list(essence) == ['spec', 'metadata', 'status']


def test_essences_keep_the_extra_metadata_fields(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    essence = storage.build(body=bodies.Body(RAW), extra_fields=['metadata.name'])
    assert essence['metadata'] == {
        'labels': {'app': 'x'}, 'annotations': {'someone/else': 'v'}, 'name': 'kopf-example-1',
    }


def test_annotations_storage_fetches_the_stored_essence(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    body = bodies.Body({'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': ENCODED}}})
    assert storage.fetch(body=body) == {
        'spec': {'field': 'value', 'items': ['a']},
        'metadata': {'labels': {'app': 'x'}, 'annotations': {'someone/else': 'v'}},
    }


@pytest.mark.parametrize('annotations', [
    pytest.param({}, id='absent'),
    pytest.param({'kopf.zalando.org/last-handled-configuration': 'not json'}, id='invalid'),
])
def test_annotations_storage_fetches_nothing_if_nothing_is_stored(
        storage: diffbase.AnnotationsDiffBaseStorage, annotations: dict[str, str],
) -> None:
    assert storage.fetch(body=bodies.Body({'metadata': {'annotations': annotations}})) is None


def test_annotations_storage_clears_its_own_key_from_old_essences(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    stored = '{"spec":{},"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":"x"}}}\n'
    body = bodies.Body({'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': stored}}})
    assert storage.fetch(body=body) == {'spec': {}}


def test_annotations_storage_does_not_rewrite_the_same_essence(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    body = bodies.Body({'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': ENCODED}}})
    patch = patches.Patch()
    storage.store(body=body, patch=patch, essence=storage.build(body=bodies.Body(RAW)))
    assert patch == {}


def test_annotations_storage_escapes_non_ascii(storage: diffbase.AnnotationsDiffBaseStorage) -> None:
    patch = patches.Patch()
    storage.store(body=bodies.Body({}), patch=patch, essence={'spec': {'x': 'ü'}})
    assert patch.meta.annotations['kopf.zalando.org/last-handled-configuration'] == '{"spec":{"x":"\\u00fc"}}\n'


def test_status_storage_stores_without_a_newline() -> None:
    storage = diffbase.StatusDiffBaseStorage()
    patch = patches.Patch()
    storage.store(body=bodies.Body({}), patch=patch, essence={'spec': {'x': 1}})
    assert patch == {'status': {'kopf': {'last-handled-configuration': '{"spec":{"x":1}}'}}}


@pytest.mark.parametrize('kwargs, path', [
    pytest.param({}, ('status', 'kopf', 'last-handled-configuration'), id='default'),
    pytest.param({'name': 'op'}, ('status', 'op', 'last-handled-configuration'), id='name'),
    pytest.param({'field': 'status.diff-base'}, ('status', 'diff-base'), id='field'),
])
def test_status_storage_uses_the_configured_field(kwargs: dict[str, str], path: dicts.FieldPath) -> None:
    assert diffbase.StatusDiffBaseStorage(**kwargs).field == path


def test_status_storage_fetches_the_stored_essence() -> None:
    storage = diffbase.StatusDiffBaseStorage()
    body = bodies.Body({'status': {'kopf': {'last-handled-configuration': '{"spec":{"x":1}}'}}})
    assert storage.fetch(body=body) == {'spec': {'x': 1}}


def test_status_storage_clears_its_own_field_from_the_extra_fields() -> None:
    storage = diffbase.StatusDiffBaseStorage()
    raw = {'spec': {}, 'status': {'kopf': {'last-handled-configuration': '{}'}}}
    assert storage.build(body=bodies.Body(raw), extra_fields=['status.kopf']) == {'spec': {}}


def test_multi_storage_stores_in_all_storages() -> None:
    storage = diffbase.MultiDiffBaseStorage([
        diffbase.StatusDiffBaseStorage(field='status.diff-base'),
        diffbase.AnnotationsDiffBaseStorage(prefix='kopf.zalando.org', key='last-handled-configuration'),
    ])
    patch = patches.Patch()
    storage.store(body=bodies.Body({}), patch=patch, essence={'spec': {}})
    assert patch == {
        'status': {'diff-base': '{"spec":{}}'},
        'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': '{"spec":{}}\n'}},
    }


@pytest.mark.parametrize('raw, expected', [
    pytest.param({'status': {'diff-base': '{"spec":{"x":1}}'},
                  'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': '{"spec":{"x":2}}\n'}}},
                 {'spec': {'x': 1}}, id='first-wins'),
    pytest.param({'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': '{"spec":{"x":2}}\n'}}},
                 {'spec': {'x': 2}}, id='second-fallback'),
    pytest.param({}, None, id='none'),
])
def test_multi_storage_fetches_from_the_first_storage_with_an_essence(
        raw: dict[str, Any], expected: bodies.BodyEssence | None,
) -> None:
    storage = diffbase.MultiDiffBaseStorage([
        diffbase.StatusDiffBaseStorage(field='status.diff-base'),
        diffbase.AnnotationsDiffBaseStorage(),
    ])
    assert storage.fetch(body=bodies.Body(raw)) == expected


def test_multi_storage_builds_without_the_keys_of_any_of_its_storages() -> None:
    storage = diffbase.MultiDiffBaseStorage([
        diffbase.StatusDiffBaseStorage(field='status.diff-base'),
        diffbase.AnnotationsDiffBaseStorage(prefix='my-op.example.com'),
    ])
    raw = {
        'spec': {},
        'metadata': {'annotations': {'my-op.example.com/last-handled-configuration': '{}'}},
        'status': {'diff-base': '{}', 'phase': 'x'},
    }
    assert storage.build(body=bodies.Body(raw), extra_fields=['status']) == {'spec': {}, 'status': {'phase': 'x'}}
