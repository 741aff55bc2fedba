"""
Remembering what the object cannot keep: the storages' writes that did not land (e.g. a pruned status).

The real storages write into a real patch; the "patched object" is a body as the
API server would return it, with or without the written fields (pruned).
"""
from typing import Any, Dict, Optional

from kopf._cogs.configs.diffbase import AnnotationsDiffBaseStorage, StatusDiffBaseStorage
from kopf._cogs.configs.progress import SmartProgressStorage, StatusProgressStorage
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.patches import Patch
from kopf._core.actions.remembering import LostState, RememberingDiffBaseStorage, RememberingProgressStorage

STARTED = '2026-11-22T08:14:26.515992+00:00'
RECORD: Any = {'started': STARTED, 'purpose': 'create', 'retries': 1, 'success': False, 'failure': False}
NEWER: Any = {'started': STARTED, 'purpose': 'create', 'retries': 2, 'success': False, 'failure': False}
ESSENCE: Any = {'spec': {'field': 'a'}}


def make_body(status: Optional[Dict[str, Any]] = None, annotations: Optional[Dict[str, str]] = None) -> Body:
    raw: Dict[str, Any] = {'metadata': {'name': 'kex1', 'namespace': 'ns1', 'annotations': annotations or {}}}
    if status is not None:
        raw['status'] = status
    return Body(raw)


# Progress.

def test_progress_missing_from_the_patched_object_is_remembered() -> None:
    lost = LostState()
    storage = RememberingProgressStorage(StatusProgressStorage(), lost)
    patch = Patch()
    storage.store(key='fn1', record=RECORD, body=make_body(), patch=patch)
    assert patch['status']['kopf']['progress']['fn1']['retries'] == 1  # still written to the storage
    assert storage.verify(make_body(status={}))  # as pruned by the API server
    assert lost.progress == {'fn1': RECORD}
    assert storage.fetch(key='fn1', body=make_body()) == RECORD


def test_progress_kept_by_the_storage_is_not_remembered() -> None:
    lost = LostState()
    storage = RememberingProgressStorage(StatusProgressStorage(), lost)
    storage.store(key='fn1', record=RECORD, body=make_body(), patch=Patch())
    assert not storage.verify(make_body(status={'kopf': {'progress': {'fn1': RECORD}}}))
    assert lost.progress == {}


def test_progress_kept_by_the_storage_has_precedence() -> None:
    storage = RememberingProgressStorage(StatusProgressStorage(), LostState(progress={'fn1': RECORD}))
    assert storage.fetch(key='fn1', body=make_body(status={'kopf': {'progress': {'fn1': NEWER}}})) == NEWER


def test_purged_progress_is_forgotten_even_if_nothing_is_patched() -> None:
    lost = LostState(progress={'fn1': RECORD, 'fn2': RECORD})
    storage = RememberingProgressStorage(StatusProgressStorage(), lost)
    storage.purge(key='fn1', body=make_body(), patch=Patch())
    storage.verify(None)
    assert lost.progress == {'fn2': RECORD}


def test_lost_progress_is_updated_if_nothing_is_patched() -> None:
    lost = LostState(progress={'fn1': RECORD})
    storage = RememberingProgressStorage(StatusProgressStorage(), lost)
    storage.store(key='fn1', record=NEWER, body=make_body(), patch=Patch())
    storage.store(key='fn2', record=NEWER, body=make_body(), patch=Patch())
    assert not storage.verify(None)
    assert lost.progress == {'fn1': NEWER}  # fn2 is not known to be lost: not remembered


def test_progress_storage_delegates_the_rest() -> None:
    storage = RememberingProgressStorage(SmartProgressStorage(), LostState())
    patch = Patch()
    storage.touch(body=make_body(), patch=patch, value='x')
    assert patch['metadata']['annotations'] == {'kopf.zalando.org/touch-dummy': 'x'}
    essence: Any = {'metadata': {'annotations': {'kopf.zalando.org/fn1': '{}', 'other': 'v'}}}
    assert storage.clear(essence=essence) == {'metadata': {'annotations': {'other': 'v'}}}


# Diff-base.

def test_essence_missing_from_the_patched_object_is_remembered() -> None:
    lost = LostState()
    storage = RememberingDiffBaseStorage(StatusDiffBaseStorage(), lost)
    patch = Patch()
    storage.store(body=make_body(), patch=patch, essence=ESSENCE)
    assert patch['status']['kopf']['last-handled-configuration'] == '{"spec":{"field":"a"}}'
    assert storage.verify(make_body(status={}))
    assert lost.essence == ESSENCE
    assert storage.fetch(body=make_body()) == ESSENCE


def test_essence_kept_by_the_storage_is_not_remembered_and_replaces_the_lost_one() -> None:
    lost = LostState(essence={'spec': {'field': 'old'}})
    storage = RememberingDiffBaseStorage(StatusDiffBaseStorage(), lost)
    storage.store(body=make_body(), patch=Patch(), essence=ESSENCE)
    kept = make_body(status={'kopf': {'last-handled-configuration': '{"spec":{"field":"a"}}'}})
    assert not storage.verify(kept)
    assert lost.essence is None
    assert storage.fetch(body=kept) == ESSENCE


def test_nothing_is_remembered_if_no_essence_is_stored() -> None:
    lost = LostState()
    storage = RememberingDiffBaseStorage(StatusDiffBaseStorage(), lost)
    assert not storage.verify(make_body(status={}))
    assert lost.essence is None
    assert storage.fetch(body=make_body()) is None


def test_lost_essence_is_updated_if_nothing_is_patched() -> None:
    lost = LostState(essence={'spec': {'field': 'old'}})
    storage = RememberingDiffBaseStorage(StatusDiffBaseStorage(), lost)
    storage.store(body=make_body(), patch=Patch(), essence=ESSENCE)
    storage.verify(None)
    assert lost.essence == ESSENCE


def test_diffbase_storage_delegates_the_building_and_clearing() -> None:
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), LostState())
    body = Body({'metadata': {'name': 'kex1', 'annotations': {
        'kopf.zalando.org/last-handled-configuration': '{}', 'other': 'v'}}, 'spec': {'field': 'a'}})
    assert storage.build(body=body) == {'spec': {'field': 'a'}, 'metadata': {'annotations': {'other': 'v'}}}
    essence: Any = {'metadata': {'annotations': {'kopf.zalando.org/last-handled-configuration': '{}'}}}
    assert storage.clear(essence=essence) == {}
