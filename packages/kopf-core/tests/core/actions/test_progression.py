"""
Progression: the per-handler states, their outcomes, and their exact on-object records.

The records go through the real progress storages into a real patch, so the
assertions are on the very strings that the API would receive (the formats are
fixed for compatibility with upstream Kopf). The clock is frozen by replacing
``progression.utcnow``.
"""
import datetime
import json
from typing import Any, Dict, Optional

import pytest

from kopf._cogs.configs.progress import AnnotationsProgressStorage, SmartProgressStorage, StatusProgressStorage
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.patches import Patch
from kopf._core.actions import progression
from kopf._core.actions.errors import HandlerChildrenRetry, PermanentError, TemporaryError
from kopf._core.actions.progression import HandlerOutcome, HandlerState, State
from kopf._core.intents.handlers import ChangingHandler, HandlerId

UTC = datetime.timezone.utc
STARTED = datetime.datetime(2026, 11, 22, 8, 14, 26, 515992, tzinfo=UTC)
NOW = datetime.datetime(2026, 11, 22, 8, 14, 26, 517012, tzinfo=UTC)
STARTED_TEXT = '2026-11-22T08:14:26.515992+00:00'
NOW_TEXT = '2026-11-22T08:14:26.517012+00:00'


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progression, 'utcnow', lambda: NOW)


def fn(**_: Any) -> None:
    pass


def handler(id: str) -> ChangingHandler:
    return ChangingHandler(fn=fn, id=HandlerId(id), param=None, errors=None, timeout=None, retries=None, backoff=None)


def make_body(annotations: Optional[Dict[str, str]] = None, status: Optional[Dict[str, Any]] = None) -> Body:
    raw: Dict[str, Any] = {'metadata': {'name': 'kex1', 'namespace': 'ns1', 'annotations': annotations or {}}}
    if status is not None:
        raw['status'] = status
    return Body(raw)


def stored(state: HandlerState, key: str = 'create_fn') -> Any:
    patch = Patch()
    State({HandlerId(key): state}).store(body=make_body(), patch=patch, storage=AnnotationsProgressStorage())
    return patch['metadata']['annotations'][f'kopf.zalando.org/{key}']


# The exact records.

def test_record_after_a_temporary_error_is_stored_exactly() -> None:
    state = HandlerState(started=STARTED, purpose='create')
    state = state.with_outcome(HandlerOutcome(final=False, exception=TemporaryError("not yet", delay=1), delay=1))
    assert stored(state) == (
        '{"started":"2026-11-22T08:14:26.515992+00:00","delayed":"2026-11-22T08:14:27.517012+00:00",'
        '"purpose":"create","retries":1,"success":false,"failure":false,"message":"not yet"}'
    )


def test_record_of_a_parent_waiting_for_sub_handlers_is_stored_exactly() -> None:
    state = HandlerState(started=STARTED, purpose='create')
    outcome = HandlerOutcome(final=False, exception=HandlerChildrenRetry(None, delay=1), delay=1,
                             subrefs=('parent/child2', 'parent/child1'))
    assert stored(state.with_outcome(outcome), 'parent') == (
        '{"started":"2026-11-22T08:14:26.515992+00:00","delayed":"2026-11-22T08:14:27.517012+00:00",'
        '"purpose":"create","retries":1,"success":false,"failure":false,"message":"None",'
        '"subrefs":["parent/child1","parent/child2"]}'
    )


def test_record_after_a_success_has_no_message() -> None:
    state = HandlerState(started=STARTED, purpose='update').with_outcome(HandlerOutcome(final=True, result=1))
    assert stored(state) == (
        f'{{"started":"{STARTED_TEXT}","stopped":"{NOW_TEXT}","purpose":"update","retries":1,'
        f'"success":true,"failure":false}}'
    )


def test_record_after_a_permanent_failure() -> None:
    state = HandlerState(started=STARTED, purpose='delete')
    state = state.with_outcome(HandlerOutcome(final=True, exception=PermanentError("bad")))
    assert stored(state) == (
        f'{{"started":"{STARTED_TEXT}","stopped":"{NOW_TEXT}","purpose":"delete","retries":1,'
        f'"success":false,"failure":true,"message":"bad"}}'
    )


def test_record_of_a_not_yet_run_handler() -> None:
    state = HandlerState.from_scratch(purpose='create')
    assert stored(state) == f'{{"started":"{NOW_TEXT}","purpose":"create","retries":0,"success":false,"failure":false}}'


def test_non_ascii_messages_are_escaped() -> None:
    state = HandlerState(started=STARTED, purpose='create')
    state = state.with_outcome(HandlerOutcome(final=True, exception=PermanentError("größe")))
    assert '"message":"gr\\u00f6\\u00dfe"' in stored(state)


def test_timestamps_are_converted_to_utc_with_microseconds() -> None:
    tz = datetime.timezone(datetime.timedelta(hours=3))
    state = HandlerState(started=datetime.datetime(2026, 11, 22, 11, 14, 26, tzinfo=tz), purpose='create')
    assert state.as_record()['started'] == '2026-11-22T08:14:26.000000+00:00'


def test_record_keys_are_in_the_fixed_order() -> None:
    state = HandlerState(started=STARTED, stopped=NOW, delayed=NOW, purpose='create', retries=2, success=True,
                         failure=False, message='m', subrefs=('a',))
    assert list(state.as_record()) == ['started', 'stopped', 'delayed', 'purpose', 'retries', 'success', 'failure',
                                       'message', 'subrefs']


@pytest.mark.parametrize('record', [
    pytest.param({'started': STARTED_TEXT, 'purpose': 'create', 'retries': 0, 'success': False, 'failure': False},
                 id='fresh'),
    pytest.param({'started': STARTED_TEXT, 'delayed': NOW_TEXT, 'purpose': 'create', 'retries': 1,
                  'success': False, 'failure': False, 'message': 'not yet', 'subrefs': ['p/a', 'p/b']},
                 id='delayed'),
    pytest.param({'started': STARTED_TEXT, 'stopped': NOW_TEXT, 'purpose': 'update', 'retries': 3,
                  'success': True, 'failure': False}, id='succeeded'),
])
def test_records_round_trip(record: Any) -> None:
    assert HandlerState.from_record(record).as_record() == record


def test_records_without_offsets_are_read_as_utc() -> None:
    state = HandlerState.from_record({'started': '2026-11-22T08:14:26.515992'})
    assert state.started == STARTED


# Outcomes.

def test_retries_count_every_outcome_including_the_success() -> None:
    state = HandlerState(started=STARTED)
    state = state.with_outcome(HandlerOutcome(final=False, exception=TemporaryError("x"), delay=1))
    state = state.with_outcome(HandlerOutcome(final=False, exception=TemporaryError("x"), delay=1))
    state = state.with_outcome(HandlerOutcome(final=True))
    assert state.retries == 3
    assert state.success


def test_success_clears_the_delay_and_the_message() -> None:
    state = HandlerState(started=STARTED, delayed=NOW, message='not yet', retries=1)
    state = state.with_outcome(HandlerOutcome(final=True))
    assert (state.delayed, state.message, state.stopped) == (None, None, NOW)


def test_retry_without_a_delay_is_due_at_once() -> None:
    outcome = HandlerOutcome(final=False, exception=TemporaryError("x", delay=None))
    state = HandlerState(started=STARTED).with_outcome(outcome)
    assert state.delayed is None
    assert state.is_awakened(NOW)


def test_subrefs_are_kept_when_the_outcome_reports_none() -> None:
    state = HandlerState(started=STARTED, subrefs=('p/a',)).with_outcome(HandlerOutcome(final=True))
    assert tuple(state.subrefs) == ('p/a',)


def test_purpose_and_start_are_kept_across_outcomes() -> None:
    state = HandlerState(started=STARTED, purpose='create')
    state = state.with_outcome(HandlerOutcome(final=False, exception=TemporaryError("x"), delay=1))
    assert (state.started, state.purpose) == (STARTED, 'create')


def test_runtime_is_measured_from_the_first_start() -> None:
    assert HandlerState(started=STARTED).runtime == NOW - STARTED


@pytest.mark.parametrize('state, expected', [
    pytest.param(HandlerState(started=STARTED), True, id='fresh'),
    pytest.param(HandlerState(started=STARTED, delayed=NOW), True, id='delay-passed'),
    pytest.param(HandlerState(started=STARTED, delayed=NOW + datetime.timedelta(seconds=1)), False, id='delayed'),
    pytest.param(HandlerState(started=STARTED, success=True), False, id='succeeded'),
    pytest.param(HandlerState(started=STARTED, failure=True), False, id='failed'),
])
def test_awakening(state: HandlerState, expected: bool) -> None:
    assert state.is_awakened() is expected


# States of several handlers.

def test_states_are_loaded_only_for_the_given_handlers() -> None:
    body = make_body({'kopf.zalando.org/fn1': json.dumps({'started': STARTED_TEXT, 'retries': 2}),
                      'kopf.zalando.org/other': json.dumps({'started': STARTED_TEXT, 'retries': 5})})
    state = State.from_storage(body=body, storage=SmartProgressStorage(), handlers_=[handler('fn1'), handler('fn2')])
    assert list(state) == ['fn1']
    assert state[HandlerId('fn1')].retries == 2


def test_states_are_loaded_from_the_status_as_a_fallback() -> None:
    body = make_body(status={'kopf': {'progress': {'fn1': {'started': STARTED_TEXT, 'retries': 4}}}})
    state = State.from_storage(body=body, storage=SmartProgressStorage(), handlers_=[handler('fn1')])
    assert state[HandlerId('fn1')].retries == 4


def test_purpose_adds_fresh_states_only_for_the_missing_handlers() -> None:
    existing = HandlerState(started=STARTED, retries=2, purpose='create')
    state = State({HandlerId('fn1'): existing}).with_purpose('create', [handler('fn1'), handler('fn2')])
    assert state.purpose == 'create'
    assert state[HandlerId('fn1')] is existing
    assert state[HandlerId('fn2')].retries == 0
    assert state[HandlerId('fn2')].purpose == 'create'


def test_outcomes_update_their_handlers_only() -> None:
    state = State({HandlerId('fn1'): HandlerState(started=STARTED), HandlerId('fn2'): HandlerState(started=STARTED)})
    state = state.with_outcomes({HandlerId('fn1'): HandlerOutcome(final=True)})
    assert state[HandlerId('fn1')].success
    assert state[HandlerId('fn2')].retries == 0


def test_unchanged_loaded_records_are_not_rewritten() -> None:
    record = f'{{"started":"{STARTED_TEXT}","purpose":"create","retries":1,"success":false,"failure":false}}'
    body = make_body({'kopf.zalando.org/fn1': record})
    storage = SmartProgressStorage()
    state = State.from_storage(body=body, storage=storage, handlers_=[handler('fn1')])
    state = state.with_purpose('create', [handler('fn1'), handler('fn2')])
    patch = Patch()
    state.store(body=body, patch=patch, storage=storage)
    assert list(patch['metadata']['annotations']) == ['kopf.zalando.org/fn2']


def test_changed_records_are_rewritten() -> None:
    record = f'{{"started":"{STARTED_TEXT}","purpose":"create","retries":1,"success":false,"failure":false}}'
    body = make_body({'kopf.zalando.org/fn1': record})
    storage = SmartProgressStorage()
    state = State.from_storage(body=body, storage=storage, handlers_=[handler('fn1')])
    state = state.with_outcomes({HandlerId('fn1'): HandlerOutcome(final=True)})
    patch = Patch()
    state.store(body=body, patch=patch, storage=storage)
    assert patch['metadata']['annotations'] == {'kopf.zalando.org/fn1': (
        f'{{"started":"{STARTED_TEXT}","stopped":"{NOW_TEXT}","purpose":"create","retries":2,'
        f'"success":true,"failure":false}}')}


def test_purge_nulls_the_given_ids_the_loaded_ids_and_all_subrefs() -> None:
    annotations = {key: '{}' for key in ['kopf.zalando.org/fn1', 'kopf.zalando.org/fn2',
                                         'kopf.zalando.org/fn2.a', 'kopf.zalando.org/fn2.a.b']}
    body = make_body(annotations, status={'kopf': {'progress': {'fn2/a': {'started': STARTED_TEXT}}}})
    state = State({HandlerId('fn2'): HandlerState(started=STARTED, subrefs=('fn2/a', 'fn2/a/b'))})
    patch = Patch()
    state.purge(body=body, patch=patch, storage=SmartProgressStorage(), ids=['fn1'])
    assert patch['metadata']['annotations'] == dict.fromkeys(annotations)
    assert patch['status'] == {'kopf': {'progress': {'fn2/a': None}}}


def test_purge_skips_the_absent_records() -> None:
    patch = Patch()
    State({}).purge(body=make_body(), patch=patch, storage=SmartProgressStorage(), ids=['fn1'])
    assert not patch


def test_store_removes_a_touched_dummy_left_by_an_earlier_operator() -> None:
    body = make_body({'kopf.zalando.org/touch-dummy': NOW_TEXT})
    state = State({HandlerId('fn1'): HandlerState(started=STARTED, purpose='create')})
    patch = Patch()
    state.store(body=body, patch=patch, storage=SmartProgressStorage())
    assert patch['metadata']['annotations']['kopf.zalando.org/touch-dummy'] is None


def test_purge_removes_a_touched_dummy_left_by_an_earlier_operator() -> None:
    body = make_body({'kopf.zalando.org/fn1': '{}', 'kopf.zalando.org/touch-dummy': NOW_TEXT})
    patch = Patch()
    State({}).purge(body=body, patch=patch, storage=SmartProgressStorage(), ids=['fn1'])
    assert patch['metadata']['annotations'] == {'kopf.zalando.org/fn1': None, 'kopf.zalando.org/touch-dummy': None}


def test_status_dummy_is_removed_by_the_status_storage() -> None:
    body = make_body(status={'kopf': {'dummy': NOW_TEXT, 'progress': {'fn1': {'started': STARTED_TEXT}}}})
    patch = Patch()
    State({}).purge(body=body, patch=patch, storage=StatusProgressStorage(), ids=['fn1'])
    assert patch['status'] == {'kopf': {'progress': {'fn1': None}, 'dummy': None}}


def test_no_dummy_is_added_when_there_is_none() -> None:
    patch = Patch()
    State({HandlerId('fn1'): HandlerState(started=STARTED, purpose='create')}).store(
        body=make_body(), patch=patch, storage=SmartProgressStorage())
    assert list(patch['metadata']['annotations']) == ['kopf.zalando.org/fn1']


def test_done_when_all_given_handlers_are_finished() -> None:
    state = State({HandlerId('ok'): HandlerState(started=STARTED, success=True),
                   HandlerId('bad'): HandlerState(started=STARTED, failure=True),
                   HandlerId('wip'): HandlerState(started=STARTED)})
    assert state.done_for(['ok', 'bad'])
    assert not state.done_for(['ok', 'wip'])


def test_counts_of_succeeded_failed_and_left_handlers() -> None:
    state = State({HandlerId('ok'): HandlerState(started=STARTED, success=True),
                   HandlerId('bad'): HandlerState(started=STARTED, failure=True),
                   HandlerId('wip'): HandlerState(started=STARTED)})
    assert state.counts(['ok', 'bad', 'wip']) == (1, 1, 1)
    assert state.counts(['ok']) == (1, 0, 0)


def test_delays_of_unfinished_handlers() -> None:
    state = State({HandlerId('ok'): HandlerState(started=STARTED, success=True),
                   HandlerId('due'): HandlerState(started=STARTED),
                   HandlerId('past'): HandlerState(started=STARTED, delayed=NOW - datetime.timedelta(seconds=5)),
                   HandlerId('later'): HandlerState(started=STARTED, delayed=NOW + datetime.timedelta(seconds=5))})
    assert list(state.delays(['ok', 'due', 'past', 'later'])) == [0, 0, 5]


def test_unfinished_states_of_other_purposes_are_superseding() -> None:
    state = State({HandlerId('a'): HandlerState(started=STARTED, purpose='update'),
                   HandlerId('b'): HandlerState(started=STARTED, purpose='resume', success=True),
                   HandlerId('c'): HandlerState(started=STARTED, purpose='create'),
                   HandlerId('d'): HandlerState(started=STARTED)})
    assert state.superseding_purposes('create') == {'update'}


def test_states_can_be_dropped_by_ids() -> None:
    state = State({HandlerId('a'): HandlerState(started=STARTED), HandlerId('b'): HandlerState(started=STARTED)},
                  purpose='create')
    remaining = state.without(['a'])
    assert list(remaining) == ['b']
    assert remaining.purpose == 'create'
    assert len(state) == 2

