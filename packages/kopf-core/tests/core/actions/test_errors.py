"""The exceptions that handlers raise to control their retrying."""
import pytest

import kopf
from kopf._core.actions.errors import (
    HandlerChildrenRetry,
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)


def test_temporary_error_has_a_default_delay_of_60_seconds() -> None:
    assert TemporaryError("not yet").delay == 60


def test_temporary_error_accepts_a_delay() -> None:
    error = TemporaryError("not yet", delay=10)
    assert error.delay == 10
    assert str(error) == "not yet"


def test_temporary_error_may_have_no_delay() -> None:
    assert TemporaryError("not yet", delay=None).delay is None


def test_temporary_error_without_a_message_is_stringified_as_none() -> None:
    # This is what the progress records store for the internal text-less retries ("message":"None").
    assert str(TemporaryError()) == "None"


@pytest.mark.parametrize('cls', [HandlerTimeoutError, HandlerRetriesError])
def test_exceeded_limits_are_permanent_errors(cls: type) -> None:
    assert issubclass(cls, PermanentError)


def test_waiting_for_sub_handlers_is_a_temporary_error() -> None:
    assert issubclass(HandlerChildrenRetry, TemporaryError)


def test_errors_are_public() -> None:
    assert kopf.TemporaryError is TemporaryError
    assert kopf.PermanentError is PermanentError
