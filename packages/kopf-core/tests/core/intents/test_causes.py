"""
Detection of the changing reason from the object's own state (never from the operator's memory).

The inputs are the raw watch-event type, the body, the old essence (``None``
if there is no diff-base), the diff, and whether the object is seen for the
first time by this operator process.
"""
import logging
from typing import Any, Dict, Optional

import pytest

from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.diffs import Diff
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource
from kopf._core.intents.causes import HANDLER_REASONS, TITLES, ChangingCause, Reason, detect_changing_reason

FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'
SOME_DIFF = Diff([('change', ('spec', 'field'), 'a', 'b')])
NO_DIFF = Diff([])


def make_body(*, deleted: bool = False, finalizers: Optional[list[str]] = None) -> Body:
    meta: Dict[str, Any] = {'name': 'kex1', 'namespace': 'ns1'}
    if deleted:
        meta['deletionTimestamp'] = '2020-01-01T00:00:00Z'
    if finalizers is not None:
        meta['finalizers'] = finalizers
    return Body({'metadata': meta, 'spec': {'field': 'b'}})


def detect(*, event: Optional[str] = 'MODIFIED', body: Optional[Body] = None, old: Any = None,
           diff: Diff = NO_DIFF, initial: bool = False) -> Reason:
    return detect_changing_reason(finalizer=FINALIZER, raw_event_type=event, body=body or make_body(),
                                  old=old, diff=diff, initial=initial)


@pytest.mark.parametrize('body', [
    pytest.param(make_body(), id='alive'),
    pytest.param(make_body(deleted=True, finalizers=[FINALIZER]), id='deleted-with-finalizer'),
])
def test_deleted_event_means_gone_regardless_of_anything_else(body: Body) -> None:
    assert detect(event='DELETED', body=body, old={'spec': {}}, diff=SOME_DIFF, initial=True) == Reason.GONE


@pytest.mark.parametrize('old, diff, initial', [
    pytest.param({'spec': {}}, NO_DIFF, False, id='unchanged'),
    pytest.param(None, NO_DIFF, False, id='no-diffbase'),
    pytest.param({'spec': {}}, SOME_DIFF, True, id='changed-initial'),
])
def test_marked_for_deletion_with_our_finalizer_means_delete(old: Any, diff: Diff, initial: bool) -> None:
    body = make_body(deleted=True, finalizers=['other/finalizer', FINALIZER])
    assert detect(body=body, old=old, diff=diff, initial=initial) == Reason.DELETE


@pytest.mark.parametrize('finalizers', [
    pytest.param(None, id='no-finalizers'),
    pytest.param([], id='empty-finalizers'),
    pytest.param(['other/finalizer'], id='other-finalizers'),
    pytest.param(['KopfFinalizerMarker'], id='unprefixed-legacy-name'),
])
def test_marked_for_deletion_without_our_finalizer_means_free(finalizers: Optional[list[str]]) -> None:
    body = make_body(deleted=True, finalizers=finalizers)
    assert detect(body=body, old={'spec': {}}, diff=SOME_DIFF) == Reason.FREE


@pytest.mark.parametrize('initial', [pytest.param(False, id='live'), pytest.param(True, id='initial')])
def test_absent_diffbase_means_create_even_when_seen_initially(initial: bool) -> None:
    assert detect(old=None, diff=SOME_DIFF, initial=initial) == Reason.CREATE


@pytest.mark.parametrize('initial', [pytest.param(False, id='live'), pytest.param(True, id='initial')])
def test_essential_changes_mean_update_even_when_seen_initially(initial: bool) -> None:
    assert detect(old={'spec': {'field': 'a'}}, diff=SOME_DIFF, initial=initial) == Reason.UPDATE


def test_unchanged_object_seen_initially_means_resume() -> None:
    assert detect(old={'spec': {'field': 'b'}}, diff=NO_DIFF, initial=True) == Reason.RESUME


def test_unchanged_object_seen_again_means_noop() -> None:
    assert detect(old={'spec': {'field': 'b'}}, diff=NO_DIFF, initial=False) == Reason.NOOP


def test_initial_listing_without_event_type_is_not_gone() -> None:
    assert detect(event=None, old={'spec': {'field': 'b'}}, initial=True) == Reason.RESUME


@pytest.mark.parametrize('reason, value', [
    pytest.param(Reason.CREATE, 'create', id='create'),
    pytest.param(Reason.UPDATE, 'update', id='update'),
    pytest.param(Reason.DELETE, 'delete', id='delete'),
    pytest.param(Reason.RESUME, 'resume', id='resume'),
])
def test_reasons_are_strings_as_stored_in_the_progress_purpose(reason: Reason, value: str) -> None:
    assert reason == value
    assert str(reason) == value
    assert f'{reason}' == value


def test_handlers_are_invoked_only_for_create_update_delete_resume() -> None:
    assert HANDLER_REASONS == {Reason.CREATE, Reason.UPDATE, Reason.DELETE, Reason.RESUME}


def test_titles_are_as_in_the_log_lines() -> None:
    assert TITLES == {Reason.CREATE: 'Creation', Reason.UPDATE: 'Updating',
                      Reason.DELETE: 'Deletion', Reason.RESUME: 'Resuming'}


@pytest.mark.parametrize('reason, expected', [
    pytest.param(Reason.DELETE, True, id='delete'),
    pytest.param(Reason.CREATE, False, id='create'),
    pytest.param(Reason.RESUME, False, id='resume'),
])
def test_cause_is_deleted_only_for_deletion(reason: Reason, expected: bool) -> None:
    cause = ChangingCause(resource=Resource('kopf.dev', 'v1', 'kopfexamples'), body=make_body(), patch=Patch(),
                          memo=None, logger=logging.getLogger('test'), reason=reason)
    assert cause.deleted is expected
