"""
Remembering the diff-bases that the object cannot keep because of their size, or whose patch is refused.

The object keeps an older diff-base (or none): it is known to be stale, so the
newer one is read from memory until a newer one is stored. Where a big diff-base
has gone is logged once the patch is applied, at the placement's level.
"""
import base64
import logging
import os
from typing import Any, Dict, Optional

import pytest

from kopf._cogs.configs import packing
from kopf._cogs.configs.diffbase import AnnotationsDiffBaseStorage
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.patches import Patch
from kopf._core.actions.remembering import LostState, RememberingDiffBaseStorage

PLAIN_KEY = 'kopf.zalando.org/last-handled-configuration'
PACKED_KEY = 'kopf.zalando.org/last-handled-configuration-packed'
OLD: Any = {'spec': {'field': 'old'}}
OLD_JSON = '{"spec":{"field":"old"}}\n'
LOGGER = logging.getLogger('test.remembering')


def random_essence(size: int) -> Any:
    return {'spec': {'blob': base64.b64encode(os.urandom(size * 3 // 4)).decode()}}


def big_essence(size: int) -> Any:
    return {'spec': {'items': [{'name': f'item-{i}', 'image': 'registry.example.com/app:1.2.3'}
                               for i in range(size // 60)]}}


def make_body(annotations: Optional[Dict[str, str]] = None) -> Body:
    return Body({'metadata': {'name': 'obj', 'namespace': 'ns', 'annotations': annotations or {}}})


def patched(body: Body, patch: Patch) -> Body:
    """The object as the API server returns it after the merge-patch of the annotations."""
    annotations = {**body.metadata.annotations, **patch.get('metadata', {}).get('annotations', {})}
    return make_body({key: value for key, value in annotations.items() if value is not None})


@pytest.fixture()
def caplog_info(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger=LOGGER.name)
    return caplog


def test_unstored_essence_is_remembered_over_the_stale_one_and_said_once(
        caplog_info: pytest.LogCaptureFixture) -> None:
    lost = LostState()
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), lost, logger=LOGGER)
    body = make_body({PLAIN_KEY: OLD_JSON})
    essence = random_essence(300 * 1024)
    patch = Patch()
    storage.store(body=body, patch=patch, essence=essence)
    assert not patch
    assert storage.verify(None)  # nothing to patch: the object is as it was, with the stale one
    assert lost.essence == essence and lost.stale == OLD
    assert storage.fetch(body=body) == essence  # not the stale one
    assert len(caplog_info.records) == 1 and caplog_info.records[0].levelno == logging.WARNING
    assert "is not stored in the annotations" in caplog_info.records[0].message
    assert "handled as changed since its last stored state" in caplog_info.records[0].message


def test_unstored_essence_of_a_new_object_is_remembered(caplog_info: pytest.LogCaptureFixture) -> None:
    lost = LostState()
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), lost, logger=LOGGER)
    essence = random_essence(300 * 1024)
    storage.store(body=make_body(), patch=Patch(), essence=essence)
    storage.verify(make_body())  # e.g. patched for other reasons, without the diff-base
    assert storage.fetch(body=make_body()) == essence
    assert "handled as a new one (its creation handlers run again)" in caplog_info.records[0].message


def test_newer_diffbase_stored_by_others_wins_over_the_remembered_one() -> None:
    lost = LostState(essence=random_essence(1024), stale=OLD)
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), lost, logger=LOGGER)
    newer = make_body({PLAIN_KEY: '{"spec":{"field":"newer"}}\n'})
    assert storage.fetch(body=newer) == {'spec': {'field': 'newer'}}


def test_essence_of_a_refused_patch_is_remembered() -> None:
    lost = LostState()
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), lost, logger=LOGGER)
    body = make_body({PLAIN_KEY: OLD_JSON})
    storage.store(body=body, patch=Patch(), essence={'spec': {'field': 'new'}})
    assert storage.verify(None)  # refused: the patch was not applied
    assert storage.fetch(body=body) == {'spec': {'field': 'new'}}


def test_essence_already_on_the_object_is_not_remembered_if_nothing_is_patched() -> None:
    lost = LostState()
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), lost, logger=LOGGER)
    body = make_body({PLAIN_KEY: OLD_JSON})
    patch = Patch()
    storage.store(body=body, patch=patch, essence=OLD)
    assert not patch
    assert not storage.verify(None)
    assert lost.essence is None


def test_stored_essence_forgets_the_remembered_one() -> None:
    lost = LostState(essence=random_essence(1024), stale=OLD)
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), lost, logger=LOGGER)
    body = make_body({PLAIN_KEY: OLD_JSON})
    patch = Patch()
    storage.store(body=body, patch=patch, essence={'spec': {'field': 'new'}})
    assert not storage.verify(patched(body, patch))
    assert lost.essence is None and lost.stale is None


def test_packed_essence_is_said_where_it_went_once_it_is_there(caplog_info: pytest.LogCaptureFixture) -> None:
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), LostState(), logger=LOGGER)
    body = make_body({PLAIN_KEY: OLD_JSON})
    essence = big_essence(1024 * 1024)
    patch = Patch()
    storage.store(body=body, patch=patch, essence=essence)
    after = patched(body, patch)
    assert not storage.verify(after)
    assert [r.levelno for r in caplog_info.records] == [logging.INFO]
    packed_size = packing.format_size(len(after.metadata.annotations[PACKED_KEY]))
    assert caplog_info.records[0].message.endswith(
        f"it is stored compressed ({packed_size}) in the annotation {PACKED_KEY}.")
    assert PLAIN_KEY not in after.metadata.annotations

    # The next change: the same form, no news for the users.
    caplog_info.clear()
    patch = Patch()
    storage.store(body=after, patch=patch, essence=big_essence(1024 * 1024 - 600))
    assert not storage.verify(patched(after, patch))
    assert [r.levelno for r in caplog_info.records] == [logging.DEBUG]


def test_packed_essence_of_a_refused_patch_is_not_said_to_be_stored(caplog_info: pytest.LogCaptureFixture) -> None:
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), LostState(), logger=LOGGER)
    essence = big_essence(1024 * 1024)
    storage.store(body=make_body(), patch=Patch(), essence=essence)
    assert storage.verify(None)
    assert caplog_info.records == []
    assert storage.fetch(body=make_body()) == essence


def test_no_logger_no_lines(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), LostState())
    storage.store(body=make_body(), patch=Patch(), essence=random_essence(300 * 1024))
    storage.verify(None)
    assert caplog.records == []
