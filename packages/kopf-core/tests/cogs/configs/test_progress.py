"""
Progress storages: the records are read from the bodies and written into the patches,
byte-for-byte as upstream Kopf writes them (the examples confirmed against it).
Bodies and patches are real; there is no API involved at this level.
"""
import datetime
import json
from typing import Any, cast

import pytest

from kopf._cogs.configs import progress
from kopf._cogs.structs import bodies, dicts, patches

RECORD: progress.ProgressRecord = {
    'started': '2026-11-22T08:14:26.515992+00:00',
    'stopped': None,
    'delayed': '2026-11-22T08:14:27.517012+00:00',
    'purpose': 'create',
    'retries': 1,
    'success': False,
    'failure': False,
    'message': 'not yet',
    'subrefs': None,
}
ENCODED = (
    '{"started":"2026-11-22T08:14:26.515992+00:00","delayed":"2026-11-22T08:14:27.517012+00:00",'
    '"purpose":"create","retries":1,"success":false,"failure":false,"message":"not yet"}'
)
PARENT_RECORD: progress.ProgressRecord = {
    'subrefs': ['parent/child2', 'parent/child1'],
    'message': 'None',
    'failure': False,
    'success': False,
    'retries': 1,
    'purpose': 'create',
    'delayed': '2026-11-22T08:14:27.517012+00:00',
    'started': '2026-11-22T08:14:26.515992+00:00',
}
PARENT_ENCODED = (
    '{"started":"2026-11-22T08:14:26.515992+00:00","delayed":"2026-11-22T08:14:27.517012+00:00",'
    '"purpose":"create","retries":1,"success":false,"failure":false,"message":"None",'
    '"subrefs":["parent/child1","parent/child2"]}'
)


def body_with_annotations(**annotations: str) -> bodies.Body:
    return bodies.Body({'metadata': {'annotations': annotations}})


# Timestamps.

def test_timestamps_are_formatted_with_microseconds_and_utc_offset() -> None:
    ts = datetime.datetime(2026, 11, 22, 8, 14, 26, 515992, tzinfo=datetime.timezone.utc)
    assert progress.format_timestamp(ts) == '2026-11-22T08:14:26.515992+00:00'


def test_timestamps_without_microseconds_still_have_them() -> None:
    ts = datetime.datetime(2026, 11, 22, 8, 14, 26, tzinfo=datetime.timezone.utc)
    assert progress.format_timestamp(ts) == '2026-11-22T08:14:26.000000+00:00'


def test_timestamps_in_other_timezones_are_converted_to_utc() -> None:
    tz = datetime.timezone(datetime.timedelta(hours=2))
    ts = datetime.datetime(2026, 11, 22, 10, 14, 26, 1, tzinfo=tz)
    assert progress.format_timestamp(ts) == '2026-11-22T08:14:26.000001+00:00'


def test_naive_timestamps_are_rejected() -> None:
    with pytest.raises(TypeError):
        progress.format_timestamp(datetime.datetime(2026, 11, 22, 8, 14, 26))


@pytest.mark.parametrize('value, expected', [
    pytest.param('2026-11-22T08:14:26.515992+00:00',
                 datetime.datetime(2026, 11, 22, 8, 14, 26, 515992, tzinfo=datetime.timezone.utc), id='utc'),
    pytest.param('2026-11-22T10:14:26.515992+02:00',
                 datetime.datetime(2026, 11, 22, 8, 14, 26, 515992, tzinfo=datetime.timezone.utc), id='offset'),
    pytest.param('2026-11-22T08:14:26.515992',
                 datetime.datetime(2026, 11, 22, 8, 14, 26, 515992, tzinfo=datetime.timezone.utc), id='naive'),
    pytest.param(None, None, id='none'),
])
def test_timestamps_are_parsed_as_aware_utc(value: str | None, expected: datetime.datetime | None) -> None:
    parsed = progress.parse_timestamp(value)
    assert parsed == expected
    assert parsed is None or parsed.tzinfo == datetime.timezone.utc


# Encoding.

def test_records_are_encoded_as_the_confirmed_example() -> None:
    assert progress.encode_record(RECORD) == ENCODED


def test_records_are_encoded_in_the_fixed_key_order_with_sorted_subrefs() -> None:
    assert progress.encode_record(PARENT_RECORD) == PARENT_ENCODED


def test_records_with_non_ascii_messages_are_escaped() -> None:
    assert progress.encode_record({'message': 'Ünïcödé ✔'}) == '{"message":"\\u00dcn\\u00efc\\u00f6d\\u00e9 \\u2714"}'


def test_verbose_records_keep_the_nulls() -> None:
    assert progress.encode_record({'started': 'x', 'stopped': None}, verbose=True) == '{"started":"x","stopped":null}'


def test_unknown_fields_are_kept_after_the_known_ones() -> None:
    assert progress.encode_record({'extra': 1, 'retries': 0}) == '{"retries":0,"extra":1}'


# Annotations storage.

def test_annotations_storage_stores_the_confirmed_example() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    storage.store(key='create_fn', record=RECORD, body=body_with_annotations(), patch=patch)
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/create_fn': ENCODED}}}


def test_annotations_storage_stores_the_sub_handler_parents_example() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    storage.store(key='parent', record=PARENT_RECORD, body=body_with_annotations(), patch=patch)
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/parent': PARENT_ENCODED}}}


def test_annotations_storage_stores_both_v1_and_v2_keys_for_long_ids() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    storage.store(key='a' * 47, record=RECORD, body=body_with_annotations(), patch=patch)
    assert patch == {'metadata': {'annotations': {
        'kopf.zalando.org/' + 'a' * 47: ENCODED,
        'kopf.zalando.org/' + 'a' * 39 + '-L2I79Q': ENCODED,
    }}}


def test_annotations_storage_stores_with_a_custom_prefix() -> None:
    storage = progress.AnnotationsProgressStorage(prefix='my-op.example.com')
    patch = patches.Patch()
    storage.store(key='fn', record=RECORD, body=body_with_annotations(), patch=patch)
    assert patch == {'metadata': {'annotations': {'my-op.example.com/fn': ENCODED}}}


def test_annotations_storage_stores_nulls_if_verbose() -> None:
    storage = progress.AnnotationsProgressStorage(verbose=True)
    patch = patches.Patch()
    storage.store(key='fn', record={'started': 'x', 'stopped': None}, body=body_with_annotations(), patch=patch)
    assert patch.meta.annotations['kopf.zalando.org/fn'] == '{"started":"x","stopped":null}'


@pytest.mark.parametrize('existing', [
    pytest.param(ENCODED, id='same-string'),
    pytest.param(json.dumps(dict(reversed(list(json.loads(ENCODED).items())))), id='same-content-other-form'),
])
def test_annotations_storage_does_not_rewrite_unchanged_records(existing: str) -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    body = body_with_annotations(**{'kopf.zalando.org/create_fn': existing})
    storage.store(key='create_fn', record=RECORD, body=body, patch=patch)
    assert patch == {}


def test_annotations_storage_rewrites_changed_records() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    body = body_with_annotations(**{'kopf.zalando.org/create_fn': '{"retries":0}'})
    storage.store(key='create_fn', record=RECORD, body=body, patch=patch)
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/create_fn': ENCODED}}}


def test_annotations_storage_overrides_an_earlier_change_of_the_same_patch() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    body = body_with_annotations(**{'kopf.zalando.org/create_fn': ENCODED})
    storage.purge(key='create_fn', body=body, patch=patch)
    storage.store(key='create_fn', record=RECORD, body=body, patch=patch)
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/create_fn': ENCODED}}}


@pytest.mark.parametrize('annotations', [
    pytest.param({'kopf.zalando.org/' + 'a' * 47: ENCODED}, id='v2'),
    pytest.param({'kopf.zalando.org/' + 'a' * 39 + '-L2I79Q': ENCODED}, id='v1'),
    pytest.param({'kopf.zalando.org/' + 'a' * 47: ENCODED, 'kopf.zalando.org/' + 'a' * 39 + '-L2I79Q': '{}'},
                 id='v2-first'),
])
def test_annotations_storage_fetches_the_first_found_key(annotations: dict[str, str]) -> None:
    storage = progress.AnnotationsProgressStorage()
    record = storage.fetch(key='a' * 47, body=body_with_annotations(**annotations))
    assert record == json.loads(ENCODED)


@pytest.mark.parametrize('annotations', [
    pytest.param({}, id='absent'),
    pytest.param({'kopf.zalando.org/other': ENCODED}, id='other-key'),
    pytest.param({'kopf.zalando.org/create_fn': 'not json'}, id='invalid-json'),
    pytest.param({'kopf.zalando.org/create_fn': '[' * 90_000}, id='too-deep'),
    pytest.param({'kopf.zalando.org/create_fn': '"a string"'}, id='not-an-object'),
])
def test_annotations_storage_fetches_nothing_if_there_is_no_record(annotations: dict[str, str]) -> None:
    storage = progress.AnnotationsProgressStorage()
    assert storage.fetch(key='create_fn', body=body_with_annotations(**annotations)) is None


def test_annotations_storage_fetches_the_marked_keys_of_replicasets_of_deployments() -> None:
    storage = progress.AnnotationsProgressStorage()
    body = bodies.Body({
        'kind': 'ReplicaSet',
        'metadata': {
            'ownerReferences': [{'kind': 'Deployment'}],
            'annotations': {'kopf.zalando.org/create_fn': '{"retries":5}', 'kopf.zalando.org/create_fn-ofDRS': ENCODED},
        },
    })
    assert storage.fetch(key='create_fn', body=body) == json.loads(ENCODED)


def test_annotations_storage_purges_by_nulling_the_present_keys_only() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    body = body_with_annotations(**{'kopf.zalando.org/' + 'a' * 39 + '-L2I79Q': ENCODED})
    storage.purge(key='a' * 47, body=body, patch=patch)
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/' + 'a' * 39 + '-L2I79Q': None}}}


def test_annotations_storage_purges_the_records_stored_in_the_same_patch() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    storage.store(key='create_fn', record=RECORD, body=body_with_annotations(), patch=patch)
    storage.purge(key='create_fn', body=body_with_annotations(), patch=patch)
    assert patch == {}


def test_annotations_storage_touches_with_the_value() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    storage.touch(body=body_with_annotations(), patch=patch, value='2026-11-22T08:14:26.515992+00:00')
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/touch-dummy': '2026-11-22T08:14:26.515992+00:00'}}}


def test_annotations_storage_untouches_by_nulling_the_present_dummy() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    storage.touch(body=body_with_annotations(**{'kopf.zalando.org/touch-dummy': 'x'}), patch=patch, value=None)
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/touch-dummy': None}}}


def test_annotations_storage_does_not_untouch_the_absent_dummy() -> None:
    storage = progress.AnnotationsProgressStorage()
    patch = patches.Patch()
    storage.touch(body=body_with_annotations(), patch=patch, value=None)
    assert patch == {}


def test_annotations_storage_touches_with_a_custom_key() -> None:
    storage = progress.AnnotationsProgressStorage(prefix='my-op.example.com', touch_key='poke')
    patch = patches.Patch()
    storage.touch(body=body_with_annotations(), patch=patch, value='x')
    assert patch == {'metadata': {'annotations': {'my-op.example.com/poke': 'x'}}}


def test_annotations_storage_clears_its_prefixed_annotations_from_essences() -> None:
    storage = progress.AnnotationsProgressStorage(prefix='my-op.example.com')
    essence = {'spec': {}, 'metadata': {'annotations': {'my-op.example.com/fn': ENCODED, 'other/x': 'y'}}}
    cleared = storage.clear(essence=essence)
    assert cleared == {'spec': {}, 'metadata': {'annotations': {'other/x': 'y'}}}
    assert essence['metadata']['annotations']['my-op.example.com/fn'] == ENCODED


def test_annotations_storage_clears_the_stanzas_left_empty() -> None:
    storage = progress.AnnotationsProgressStorage()
    essence = {'spec': {}, 'metadata': {'annotations': {'kopf.zalando.org/fn': ENCODED}}}
    assert storage.clear(essence=essence) == {'spec': {}}


# Status storage.

FULL_STATUS_RECORD = {
    'started': '2026-11-22T08:14:26.515992+00:00',
    'stopped': None,
    'delayed': '2026-11-22T08:14:27.517012+00:00',
    'purpose': 'create',
    'retries': 1,
    'success': False,
    'failure': False,
    'message': 'not yet',
    'subrefs': None,
}


def test_status_storage_stores_objects_with_nulls() -> None:
    storage = progress.StatusProgressStorage()
    patch = patches.Patch()
    storage.store(key='parent/child1', record={'started': RECORD['started']}, body=bodies.Body({}), patch=patch)
    assert patch == {'status': {'kopf': {'progress': {'parent/child1': {
        'started': '2026-11-22T08:14:26.515992+00:00', 'stopped': None, 'delayed': None, 'purpose': None,
        'retries': None, 'success': None, 'failure': None, 'message': None, 'subrefs': None,
    }}}}}


def test_status_storage_stores_in_the_fixed_key_order() -> None:
    storage = progress.StatusProgressStorage()
    patch = patches.Patch()
    reversed_record = cast(progress.ProgressRecord, dict(reversed(list(RECORD.items()))))
    storage.store(key='fn', record=reversed_record, body=bodies.Body({}), patch=patch)
    assert list(patch['status']['kopf']['progress']['fn']) == list(FULL_STATUS_RECORD)


@pytest.mark.parametrize('kwargs, path', [
    pytest.param({}, ('status', 'kopf', 'progress'), id='default'),
    pytest.param({'name': 'my-op'}, ('status', 'my-op', 'progress'), id='name'),
    pytest.param({'field': 'status.my-operator'}, ('status', 'my-operator'), id='field'),
    pytest.param({'field': ('status', 'a.b')}, ('status', 'a.b'), id='tuple-field'),
])
def test_status_storage_uses_the_configured_field(kwargs: dict[str, Any], path: dicts.FieldPath) -> None:
    storage = progress.StatusProgressStorage(**kwargs)
    assert storage.field == path


def test_status_storage_fetches_the_records_by_raw_ids() -> None:
    storage = progress.StatusProgressStorage()
    body = bodies.Body({'status': {'kopf': {'progress': {'fn/spec.field': FULL_STATUS_RECORD}}}})
    assert storage.fetch(key='fn/spec.field', body=body) == FULL_STATUS_RECORD


@pytest.mark.parametrize('raw', [
    pytest.param({}, id='no-status'),
    pytest.param({'status': None}, id='null-status'),
    pytest.param({'status': {'kopf': {'progress': {'other': {}}}}}, id='other-id'),
])
def test_status_storage_fetches_nothing_if_there_is_no_record(raw: dict[str, Any]) -> None:
    storage = progress.StatusProgressStorage()
    assert storage.fetch(key='fn', body=bodies.Body(raw)) is None


def test_status_storage_does_not_rewrite_unchanged_records() -> None:
    storage = progress.StatusProgressStorage()
    patch = patches.Patch()
    body = bodies.Body({'status': {'kopf': {'progress': {'fn': FULL_STATUS_RECORD}}}})
    storage.store(key='fn', record=RECORD, body=body, patch=patch)
    assert patch == {}


def test_status_storage_purges_by_nulling_the_present_records() -> None:
    storage = progress.StatusProgressStorage()
    patch = patches.Patch()
    storage.purge(key='fn', body=bodies.Body({'status': {'kopf': {'progress': {'fn': {}}}}}), patch=patch)
    assert patch == {'status': {'kopf': {'progress': {'fn': None}}}}


def test_status_storage_purges_absent_records_by_dropping_them_from_the_patch() -> None:
    storage = progress.StatusProgressStorage()
    patch = patches.Patch()
    storage.store(key='fn', record=RECORD, body=bodies.Body({}), patch=patch)
    storage.purge(key='fn', body=bodies.Body({}), patch=patch)
    assert patch == {}


def test_status_storage_touches_its_dummy_field() -> None:
    storage = progress.StatusProgressStorage()
    patch = patches.Patch()
    storage.touch(body=bodies.Body({}), patch=patch, value='x')
    assert patch == {'status': {'kopf': {'dummy': 'x'}}}


def test_status_storage_clears_its_field_from_essences() -> None:
    storage = progress.StatusProgressStorage()
    essence: dict[str, Any] = {'spec': {}, 'status': {'kopf': {'progress': {'fn': {}}}}}
    assert storage.clear(essence=essence) == {'spec': {}}


def test_status_storage_keeps_other_status_fields_in_essences() -> None:
    storage = progress.StatusProgressStorage()
    essence = {'status': {'phase': 'x', 'kopf': {'progress': {'fn': {}}}}}
    assert storage.clear(essence=essence) == {'status': {'phase': 'x'}}


# Multi & smart storages.

def test_multi_storage_stores_in_all_storages() -> None:
    storage = progress.MultiProgressStorage([
        progress.AnnotationsProgressStorage(prefix='my-op.example.com'),
        progress.StatusProgressStorage(field='status.my-operator'),
    ])
    patch = patches.Patch()
    storage.store(key='fn', record=RECORD, body=bodies.Body({}), patch=patch)
    assert patch['metadata']['annotations'] == {'my-op.example.com/fn': ENCODED}
    assert patch['status']['my-operator']['fn'] == FULL_STATUS_RECORD


@pytest.mark.parametrize('raw, expected_retries', [
    pytest.param({'metadata': {'annotations': {'kopf.zalando.org/fn': '{"retries":1}'}},
                  'status': {'kopf': {'progress': {'fn': {'retries': 2}}}}}, 1, id='first-storage-wins'),
    pytest.param({'status': {'kopf': {'progress': {'fn': {'retries': 2}}}}}, 2, id='second-storage-fallback'),
])
def test_multi_storage_fetches_from_the_first_storage_with_a_record(raw: dict[str, Any], expected_retries: int) -> None:
    storage = progress.MultiProgressStorage([progress.AnnotationsProgressStorage(), progress.StatusProgressStorage()])
    record = storage.fetch(key='fn', body=bodies.Body(raw))
    assert record is not None
    assert record['retries'] == expected_retries


def test_smart_storage_writes_only_the_annotations() -> None:
    storage = progress.SmartProgressStorage()
    patch = patches.Patch()
    storage.store(key='create_fn', record=RECORD, body=bodies.Body({}), patch=patch)
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/create_fn': ENCODED}}}


def test_smart_storage_touches_only_the_annotations() -> None:
    storage = progress.SmartProgressStorage()
    patch = patches.Patch()
    storage.touch(body=bodies.Body({}), patch=patch, value='x')
    assert patch == {'metadata': {'annotations': {'kopf.zalando.org/touch-dummy': 'x'}}}


@pytest.mark.parametrize('raw, expected_retries', [
    pytest.param({'metadata': {'annotations': {'kopf.zalando.org/fn': '{"retries":1}'}},
                  'status': {'kopf': {'progress': {'fn': {'retries': 2}}}}}, 1, id='annotations-first'),
    pytest.param({'status': {'kopf': {'progress': {'fn': {'retries': 2}}}}}, 2, id='status-fallback'),
])
def test_smart_storage_reads_the_annotations_then_the_status(raw: dict[str, Any], expected_retries: int) -> None:
    record = progress.SmartProgressStorage().fetch(key='fn', body=bodies.Body(raw))
    assert record is not None
    assert record['retries'] == expected_retries


def test_smart_storage_purges_both_the_annotations_and_the_existing_status_entries() -> None:
    storage = progress.SmartProgressStorage()
    patch = patches.Patch()
    body = bodies.Body({
        'metadata': {'annotations': {'kopf.zalando.org/fn': '{}'}},
        'status': {'kopf': {'progress': {'fn': {}}}},
    })
    storage.purge(key='fn', body=body, patch=patch)
    storage.purge(key='other', body=body, patch=patch)
    assert patch == {
        'metadata': {'annotations': {'kopf.zalando.org/fn': None}},
        'status': {'kopf': {'progress': {'fn': None}}},
    }


def test_smart_storage_clears_both_the_annotations_and_the_status_from_essences() -> None:
    storage = progress.SmartProgressStorage()
    essence = {
        'spec': {},
        'metadata': {'annotations': {'kopf.zalando.org/fn': '{}', 'other/x': 'y'}},
        'status': {'kopf': {'progress': {'fn': {}}}},
    }
    assert storage.clear(essence=essence) == {'spec': {}, 'metadata': {'annotations': {'other/x': 'y'}}}


def test_smart_storage_passes_its_options_to_its_storages() -> None:
    storage = progress.SmartProgressStorage(name='op', prefix='my-op.example.com', touch_key='poke', v1=False)
    assert storage.annotations.prefix == 'my-op.example.com'
    assert storage.annotations.touch_key == 'poke'
    assert storage.annotations.v1 is False
    assert storage.status.field == ('status', 'op', 'progress')
    assert storage.status.touch_field == ('status', 'op', 'dummy')
