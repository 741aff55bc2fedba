"""The handlers' results go to the status only if the API server can take them as JSON."""
import datetime
import logging
import math
from typing import Any

import pytest

from kopf._cogs.structs.patches import Patch
from kopf._core.actions.progression import HandlerOutcome
from kopf._core.actions.results import store_result

LOGGER = logging.getLogger('test-results')


@pytest.mark.parametrize('result', [{'a': [1, 2.5, 'x', None, True]}, 'text', 0, []])
def test_serialisable_results_are_stored(result: Any) -> None:
    patch = Patch()
    store_result(patch, 'fn', HandlerOutcome(final=True, result=result), LOGGER)
    assert patch == {'status': {'fn': result}}


@pytest.mark.parametrize('result, reason', [
    ({'when': datetime.datetime(2020, 1, 1)}, 'not JSON serializable'),
    ({'what': object()}, 'not JSON serializable'),
    ({'ratio': math.nan}, 'not JSON compliant'),
])
def test_unserialisable_results_are_dropped_with_one_clear_error(
        result: Any, reason: str, caplog: pytest.LogCaptureFixture) -> None:
    patch = Patch()
    with caplog.at_level(logging.DEBUG):
        store_result(patch, 'fn', HandlerOutcome(final=True, result=result), LOGGER)
    assert patch == {}
    assert len(caplog.records) == 1
    record = caplog.records[0]
    assert record.levelno == logging.ERROR and record.exc_info is None
    assert "Handler 'fn' succeeded, but its result cannot be stored in the status" in record.message
    assert reason in record.message
    assert 'return only JSON-serialisable values' in record.message


@pytest.mark.parametrize('outcome', [
    HandlerOutcome(final=True, result=None),
    HandlerOutcome(final=False, result={'a': 1}),
    HandlerOutcome(final=True, result={'a': 1}, exception=ValueError('boom')),
])
def test_nothing_is_stored_without_a_final_successful_result(outcome: HandlerOutcome) -> None:
    patch = Patch()
    store_result(patch, 'fn', outcome, LOGGER)
    assert patch == {}
