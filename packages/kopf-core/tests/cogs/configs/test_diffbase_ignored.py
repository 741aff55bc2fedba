"""
The diff-base storages' ``ignored_fields`` (as in Kopf 1.45.2): excluded from the built
essence (after the handlers' extra fields, with the parents they leave empty), so that
changes of only those fields are no changes; also from the essences read back.
"""
import json
from typing import Any, Dict

import pytest

from kopf._cogs.configs import diffbase
from kopf._cogs.structs import bodies, diffs, patches

RAW: Dict[str, Any] = {
    'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
    'metadata': {'name': 'n', 'namespace': 'ns', 'labels': {'app': 'x', 'rev': '7'}},
    'spec': {'replicas': 3, 'image': 'nginx', 'template': {'hash': 'abc', 'port': 80}, 'list': [1, 2]},
    'status': {'phase': 'Running'},
}

STORAGES = [
    pytest.param(diffbase.AnnotationsDiffBaseStorage, id='annotations'),
    pytest.param(diffbase.StatusDiffBaseStorage, id='status'),
]


@pytest.mark.parametrize('cls', STORAGES)
@pytest.mark.parametrize('ignored, expected', [
    pytest.param(['spec.replicas'], {'spec': {'image': 'nginx', 'template': {'hash': 'abc', 'port': 80},
                                              'list': [1, 2]},
                                     'metadata': {'labels': {'app': 'x', 'rev': '7'}}}, id='dotted'),
    pytest.param([('spec', 'template', 'hash'), ['metadata', 'labels', 'rev']],
                 {'spec': {'replicas': 3, 'image': 'nginx', 'template': {'port': 80}, 'list': [1, 2]},
                  'metadata': {'labels': {'app': 'x'}}}, id='tuples-and-lists'),
    pytest.param(['spec.template.hash', 'spec.template.port', 'metadata.labels.app', 'metadata.labels.rev'],
                 {'spec': {'replicas': 3, 'image': 'nginx', 'list': [1, 2]}}, id='emptied-parents-go'),
    pytest.param(['spec'], {'metadata': {'labels': {'app': 'x', 'rev': '7'}}}, id='a-whole-stanza'),
    pytest.param(['spec.absent', 'spec.image.deeper', 'spec.list.0', 'nothing'],
                 {'spec': {'replicas': 3, 'image': 'nginx', 'template': {'hash': 'abc', 'port': 80},
                           'list': [1, 2]},
                  'metadata': {'labels': {'app': 'x', 'rev': '7'}}}, id='absent-or-unreachable'),
    pytest.param('a generator of spec.replicas',
                 {'spec': {'image': 'nginx', 'template': {'hash': 'abc', 'port': 80}, 'list': [1, 2]},
                  'metadata': {'labels': {'app': 'x', 'rev': '7'}}}, id='a-generator'),
])
def test_ignored_fields_are_not_in_the_essence(cls: Any, ignored: Any, expected: Dict[str, Any]) -> None:
    if ignored == 'a generator of spec.replicas':  # made per test: it is consumed once
        ignored = (field for field in ['spec.replicas'])
    storage = cls(ignored_fields=ignored)
    assert storage.build(body=bodies.Body(RAW)) == expected
    assert storage.build(body=bodies.Body(RAW)) == expected  # the iterable is kept, not consumed


def test_ignored_fields_are_remembered_as_a_list() -> None:
    storage = diffbase.AnnotationsDiffBaseStorage(ignored_fields=('spec.a', ('spec', 'b')))
    assert storage.ignored_fields == ['spec.a', ('spec', 'b')]
    assert diffbase.StatusDiffBaseStorage().ignored_fields == []


def test_ignored_fields_win_over_the_handlers_extra_fields() -> None:
    storage = diffbase.AnnotationsDiffBaseStorage(ignored_fields=['status.phase'])
    essence = storage.build(body=bodies.Body(RAW), extra_fields=['status.phase'])
    assert 'status' not in essence


def test_changes_of_only_ignored_fields_are_no_changes() -> None:
    storage = diffbase.AnnotationsDiffBaseStorage(ignored_fields=['spec.replicas', 'metadata.labels.rev'])
    body = bodies.Body(RAW)
    patch = patches.Patch()
    storage.store(body=body, patch=patch, essence=storage.build(body=body))
    stored = patch['metadata']['annotations']['kopf.zalando.org/last-handled-configuration']
    assert 'replicas' not in json.loads(stored)['spec']
    assert 'rev' not in json.loads(stored)['metadata']['labels']

    changed_raw = json.loads(json.dumps(RAW))
    changed_raw['spec']['replicas'] = 5
    changed_raw['metadata']['labels']['rev'] = '8'
    changed_raw['metadata']['annotations'] = {'kopf.zalando.org/last-handled-configuration': stored}
    changed = bodies.Body(changed_raw)
    old = storage.fetch(body=changed)
    new = storage.build(body=changed)
    assert old is not None
    assert not diffs.diff(old, new)

    changed_raw['spec']['image'] = 'httpd'
    assert diffs.diff(old, storage.build(body=bodies.Body(changed_raw)))


def test_ignored_fields_are_dropped_from_the_essences_read_back() -> None:
    # E.g. stored before the field was ignored, or by another operator: not a change by itself.
    stored = json.dumps({'spec': {'replicas': 3, 'image': 'nginx'}})
    body = bodies.Body(dict(RAW, metadata={'annotations': {'kopf.zalando.org/last-handled-configuration': stored}}))
    storage = diffbase.AnnotationsDiffBaseStorage(ignored_fields=['spec.replicas'])
    assert storage.fetch(body=body) == {'spec': {'image': 'nginx'}}


def test_status_storage_drops_ignored_fields_from_the_essences_read_back() -> None:
    stored = json.dumps({'spec': {'replicas': 3, 'image': 'nginx'}})
    body = bodies.Body(dict(RAW, status={'kopf': {'last-handled-configuration': stored}}))
    storage = diffbase.StatusDiffBaseStorage(ignored_fields=['spec.replicas'])
    assert storage.fetch(body=body) == {'spec': {'image': 'nginx'}}


def test_multi_storage_applies_its_storages_ignored_fields() -> None:
    storage = diffbase.MultiDiffBaseStorage([
        diffbase.AnnotationsDiffBaseStorage(ignored_fields=['spec.replicas']),
        diffbase.StatusDiffBaseStorage(ignored_fields=['spec.image']),
    ])
    essence = storage.build(body=bodies.Body(RAW))
    assert 'replicas' not in essence['spec'] and 'image' not in essence['spec']


@pytest.mark.parametrize('cls', STORAGES)
@pytest.mark.parametrize('ignored, error, message', [
    pytest.param('spec.replicas', TypeError, r"not a single string: use ignored_fields=\['spec.replicas'\]",
                 id='a-single-string'),
    pytest.param([123], TypeError, r"dotted string or a tuple/list of keys, got 123", id='an-int'),
    pytest.param([None], TypeError, r"got None", id='none'),
    pytest.param([''], ValueError, r"not the whole object", id='empty-string'),
    pytest.param([()], ValueError, r"not the whole object", id='empty-tuple'),
])
def test_invalid_ignored_fields_are_refused_at_once(cls: Any, ignored: Any, error: Any, message: str) -> None:
    with pytest.raises(error, match=message):
        cls(ignored_fields=ignored)
