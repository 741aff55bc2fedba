"""
Annotation keys: safe characters, hashing of long keys, v1/v2 generations, and
the ReplicaSet marks; byte-for-byte as upstream Kopf forms them (the test vectors).
"""
import hashlib
from typing import Any

import pytest

from kopf._cogs.configs import conventions
from kopf._cogs.structs import bodies


class MarkingStorage(conventions.StorageKeyFormingConvention, conventions.StorageKeyMarkingConvention):
    pass


@pytest.fixture()
def forming() -> conventions.StorageKeyFormingConvention:
    return conventions.StorageKeyFormingConvention(prefix='kopf.zalando.org', v1=True)


@pytest.mark.parametrize('key, blake2b_hex, suffix', [
    pytest.param('create_fn', '0198c5b8', '-AZjFuA', id='create_fn'),
    pytest.param('a' * 47, '2f623bf5', '-L2I79Q', id='a47'),
    pytest.param('x' * 60 + '/abc', '1ec53cc2', '-HsU8wg', id='x60-slash'),
    pytest.param('x' * 60 + '.abc', '0d5fa10d', '-DV-hDQ', id='x60-dot'),
])
def test_suffixes_are_blake2b_with_a_native_4_byte_digest_in_safe_base64(
        key: str, blake2b_hex: str, suffix: str,
) -> None:
    assert hashlib.blake2b(key.encode('utf-8'), digest_size=4).hexdigest() == blake2b_hex
    assert conventions.make_suffix(key) == suffix


@pytest.mark.parametrize('key', ['create_fn', 'a' * 100, 'x/y/z', 'ünïcödé'])
def test_suffixes_are_a_dash_and_6_chars_ending_with_a_2_bit_char(key: str) -> None:
    suffix = conventions.make_suffix(key)
    assert len(suffix) == 7
    assert suffix[0] == '-'
    assert suffix[6] in 'AQgw'


@pytest.mark.parametrize('key, expected', [
    pytest.param('fn', 'fn', id='plain'),
    pytest.param('parent/child', 'parent.child', id='slash'),
    pytest.param('fn<lambda>', 'fn_lambda_', id='angle-brackets'),
])
def test_unsafe_characters_are_replaced(key: str, expected: str) -> None:
    assert conventions.make_safe(key) == expected


@pytest.mark.parametrize('key, expected', [
    pytest.param('create_fn', ['kopf.zalando.org/create_fn'], id='create_fn'),
    pytest.param('update_fn/spec.field', ['kopf.zalando.org/update_fn.spec.field'], id='field-handler'),
    pytest.param('a' * 47, [
        'kopf.zalando.org/' + 'a' * 47,
        'kopf.zalando.org/' + 'a' * 39 + '-L2I79Q',
    ], id='a47'),
    pytest.param('x' * 60 + '/abc', [
        'kopf.zalando.org/' + 'x' * 56 + '-HsU8wg',
        'kopf.zalando.org/' + 'x' * 39 + '-DV-hDQ',
    ], id='x60-slash-abc'),
])
def test_keys_match_the_test_vectors(
        forming: conventions.StorageKeyFormingConvention, key: str, expected: list[str],
) -> None:
    assert forming.make_keys(key) == expected


def test_keys_of_v2_only_are_not_duplicated_as_v1() -> None:
    forming = conventions.StorageKeyFormingConvention(prefix='kopf.zalando.org', v1=False)
    assert forming.make_keys('a' * 47) == ['kopf.zalando.org/' + 'a' * 47]


def test_v2_keys_are_hashed_by_the_name_length_only(forming: conventions.StorageKeyFormingConvention) -> None:
    assert forming.make_v2_key('a' * 63) == 'kopf.zalando.org/' + 'a' * 63
    assert forming.make_v2_key('a' * 64) == 'kopf.zalando.org/' + 'a' * 56 + conventions.make_suffix('a' * 64)


def test_v1_keys_are_hashed_by_the_length_with_the_prefix(forming: conventions.StorageKeyFormingConvention) -> None:
    assert forming.make_v1_key('a' * 46) == 'kopf.zalando.org/' + 'a' * 46
    assert forming.make_v1_key('a' * 47) == 'kopf.zalando.org/' + 'a' * 39 + '-L2I79Q'


def test_custom_prefixes_are_used(forming: conventions.StorageKeyFormingConvention) -> None:
    forming = conventions.StorageKeyFormingConvention(prefix='my-op.example.com', v1=True)
    assert forming.make_keys('create_fn') == ['my-op.example.com/create_fn']


@pytest.mark.parametrize('prefix', ['', None])
def test_empty_prefixes_are_refused(prefix: str | None) -> None:
    with pytest.raises(ValueError):
        conventions.StorageKeyFormingConvention(prefix=prefix, v1=True)  # type: ignore[arg-type]


REPLICASET_OF_DEPLOYMENT = bodies.Body({
    'kind': 'ReplicaSet',
    'metadata': {'ownerReferences': [{'kind': 'Deployment', 'name': 'd'}]},
})


@pytest.mark.parametrize('raw', [
    pytest.param({'kind': 'ReplicaSet'}, id='replicaset-without-owners'),
    pytest.param({'kind': 'ReplicaSet', 'metadata': {'ownerReferences': [{'kind': 'Other'}]}}, id='other-owner'),
    pytest.param({'kind': 'Pod', 'metadata': {'ownerReferences': [{'kind': 'Deployment'}]}}, id='other-kind'),
])
def test_keys_of_other_objects_are_not_marked(raw: dict[str, Any]) -> None:
    storage = MarkingStorage(prefix='kopf.zalando.org', v1=True)
    assert storage.make_keys('create_fn', body=bodies.Body(raw)) == ['kopf.zalando.org/create_fn']


def test_keys_of_replicasets_of_deployments_are_marked_before_hashing() -> None:
    storage = MarkingStorage(prefix='kopf.zalando.org', v1=True)
    marked = 'a' * 60 + '-ofDRS'
    assert storage.make_keys('create_fn', body=REPLICASET_OF_DEPLOYMENT) == ['kopf.zalando.org/create_fn-ofDRS']
    assert storage.make_keys('a' * 60, body=REPLICASET_OF_DEPLOYMENT) == [
        'kopf.zalando.org/' + marked[:56] + conventions.make_suffix(marked),
        'kopf.zalando.org/' + marked[:39] + conventions.make_suffix(marked),
    ]


def test_storages_without_the_marking_convention_do_not_mark(forming: conventions.StorageKeyFormingConvention) -> None:
    assert forming.make_keys('create_fn', body=REPLICASET_OF_DEPLOYMENT) == ['kopf.zalando.org/create_fn']


@pytest.mark.parametrize('d, expected', [
    pytest.param({'metadata': {'annotations': {}}}, {}, id='empty-annotations'),
    pytest.param({'metadata': {'labels': {}, 'annotations': {'a': 'b'}}},
                 {'metadata': {'annotations': {'a': 'b'}}}, id='empty-labels'),
    pytest.param({'status': {}}, {}, id='empty-status'),
    pytest.param({'spec': {}, 'status': {'x': None}}, {'spec': {}, 'status': {'x': None}}, id='non-empty-kept'),
])
def test_empty_stanzas_are_removed(d: dict[str, Any], expected: dict[str, Any]) -> None:
    conventions.StorageStanzaCleaner().remove_empty_stanzas(d)
    assert d == expected


def test_remembered_keys_follow_the_body_the_prefix_and_the_class() -> None:
    storage = MarkingStorage(prefix='kopf.zalando.org', v1=True)
    assert storage.make_keys('fn', body=bodies.Body({'kind': 'Pod'})) == ['kopf.zalando.org/fn']
    assert storage.make_keys('fn', body=REPLICASET_OF_DEPLOYMENT) == ['kopf.zalando.org/fn-ofDRS']
    storage.prefix = 'example.com'
    assert storage.make_keys('fn', body=bodies.Body({'kind': 'Pod'})) == ['example.com/fn']

    class Upper(conventions.StorageKeyFormingConvention):
        def make_v2_key(self, key: str, *, body: bodies.Body | None = None) -> str:
            return super().make_v2_key(key.upper(), body=body)

    assert Upper(prefix='example.com', v1=False).make_keys('fn') == ['example.com/FN']
    assert conventions.StorageKeyFormingConvention(prefix='example.com', v1=False).make_keys('fn') == ['example.com/fn']


def test_the_returned_keys_are_the_callers_own() -> None:
    storage = conventions.StorageKeyFormingConvention(prefix='example.com', v1=False)
    storage.make_keys('fn').append('garbage')
    assert storage.make_keys('fn') == ['example.com/fn']
