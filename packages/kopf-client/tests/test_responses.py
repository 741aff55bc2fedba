"""
Error responses turned into the framework's API errors, with their Status payloads.
"""
from __future__ import annotations

import pytest

from kopf import clients
from kopf_client._responses import make_error, make_watch_error


def test_status_payload_is_kept_in_the_error() -> None:
    payload = {'kind': 'Status', 'code': 409, 'reason': 'Conflict', 'message': 'the object has been modified',
               'details': {'name': 'kex1'}}
    error = make_error(status=409, payload=payload, text='')
    assert isinstance(error, clients.APIConflictError)
    assert error.status == 409
    assert error.payload == payload
    assert error.details == {'name': 'kex1'}
    assert str(error) == 'the object has been modified'


def test_non_json_text_becomes_the_message() -> None:
    error = make_error(status=502, payload=None, text='<html>Bad Gateway</html>\n')
    assert isinstance(error, clients.APIServerError)
    assert error.payload is None
    assert str(error) == '<html>Bad Gateway</html>'


def test_very_long_text_is_truncated_in_the_message() -> None:
    error = make_error(status=502, payload=None, text='x' * 10_000)
    assert len(str(error)) == 1000


def test_empty_body_gives_a_generic_message() -> None:
    error = make_error(status=403, payload=None, text='')
    assert isinstance(error, clients.APIForbiddenError)
    assert str(error) == 'HTTP 403'


def test_throttling_error_knows_when_to_retry() -> None:
    error = make_error(status=429, payload=None, text='', headers={'Retry-After': '12'})
    assert isinstance(error, clients.APITooManyRequestsError)
    assert error.retry_after == 12


@pytest.mark.parametrize('code, error_cls', [
    pytest.param(410, clients.APIGoneError, id='410'),
    pytest.param(500, clients.APIServerError, id='500'),
    pytest.param(None, clients.APIServerError, id='code-less'),
])
def test_watch_errors_take_the_status_from_the_object(code: int | None, error_cls: type[clients.APIError]) -> None:
    status_object = {'kind': 'Status', 'code': code, 'message': 'too old resource version'}
    error = make_watch_error(status_object)
    assert type(error) is error_cls
    assert error.payload == status_object
