"""
Diff-bases that the storages ignore as beyond the bounds of a real one: said once per reading.

The object is then handled as if it had no diff-base (as with a broken one), and the
next diff-base stored replaces the ignored one.
"""
import base64
import gzip
import logging
from typing import Any, Dict, Optional

import pytest

from kopf._cogs.configs.diffbase import AnnotationsDiffBaseStorage, MultiDiffBaseStorage, StatusDiffBaseStorage
from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.patches import Patch
from kopf._core.actions.remembering import LostState, RememberingDiffBaseStorage

PLAIN_KEY = 'kopf.zalando.org/last-handled-configuration'
PACKED_KEY = 'kopf.zalando.org/last-handled-configuration-packed'
LOGGER = logging.getLogger('test.remembering.ignored')
BOMB = 'v1:gzip+base64:' + base64.b64encode(gzip.compress(b'{"spec":[' + b'{},' * 1_000_000 + b'{}]}')).decode()
DEEP = '[' * 90_000


def make_body(annotations: Optional[Dict[str, str]] = None, **fields: Any) -> Body:
    return Body({'metadata': {'name': 'obj', 'namespace': 'ns', 'annotations': annotations or {}}, **fields})


@pytest.fixture()
def caplog_all(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger=LOGGER.name)
    return caplog


@pytest.mark.parametrize('annotations, where, reason', [
    pytest.param({PACKED_KEY: BOMB}, PACKED_KEY, "it has more than 100,000 containers", id='bomb'),
    pytest.param({PLAIN_KEY: DEEP}, PLAIN_KEY, "it is nested deeper than 200 levels", id='deep'),
])
def test_ignored_diffbase_is_warned_about_once_and_the_object_has_none(
        caplog_all: pytest.LogCaptureFixture, annotations: Dict[str, str], where: str, reason: str) -> None:
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), LostState(), logger=LOGGER)
    assert storage.fetch(body=make_body(annotations)) is None
    assert [record.levelno for record in caplog_all.records] == [logging.WARNING]
    message = caplog_all.records[0].message
    assert f"The last-handled configuration in the annotation {where} is ignored: {reason}" in message
    assert message.endswith("The object is handled as if it had none.")


def test_ignored_diffbase_is_not_said_to_leave_the_object_without_one_if_another_is_read(
        caplog_all: pytest.LogCaptureFixture) -> None:
    storage = RememberingDiffBaseStorage(
        MultiDiffBaseStorage([AnnotationsDiffBaseStorage(), StatusDiffBaseStorage()]), LostState(), logger=LOGGER)
    body = make_body({PACKED_KEY: BOMB}, status={'kopf': {'last-handled-configuration': '{"spec":{}}'}})
    assert storage.fetch(body=body) == {'spec': {}}
    assert len(caplog_all.records) == 1
    assert "is ignored" in caplog_all.records[0].message and "had none" not in caplog_all.records[0].message


def test_ignored_diffbase_is_replaced_by_the_next_stored_one(caplog_all: pytest.LogCaptureFixture) -> None:
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), LostState(), logger=LOGGER)
    body = make_body({PACKED_KEY: BOMB, PLAIN_KEY: DEEP})
    patch = Patch()
    storage.store(body=body, patch=patch, essence={'spec': {'field': 'value'}})
    assert patch == {'metadata': {'annotations': {PLAIN_KEY: '{"spec":{"field":"value"}}\n', PACKED_KEY: None}}}
    assert not storage.verify(make_body({PLAIN_KEY: '{"spec":{"field":"value"}}\n'}))
    assert not [record for record in caplog_all.records if record.levelno >= logging.WARNING]


def test_broken_diffbase_is_not_warned_about(caplog_all: pytest.LogCaptureFixture) -> None:
    storage = RememberingDiffBaseStorage(AnnotationsDiffBaseStorage(), LostState(), logger=LOGGER)
    assert storage.fetch(body=make_body({PLAIN_KEY: '{not json', PACKED_KEY: 'v1:gzip+base64:!'})) is None
    assert not caplog_all.records
