"""
``ConnectionInfo``'s helpers for one's own HTTP sessions: headers, TLS context, basic auth.

Kopf's manual builds custom sessions from them (see "Authentication"); kopf-client
builds its own sessions with the same ones.
"""
import base64
import ssl
import sys
import types
from typing import Optional

import pytest

import kopf


def test_token_gives_a_bearer_header() -> None:
    info = kopf.ConnectionInfo(server='https://k8s', token='abc')
    assert info.as_http_headers() == {'Authorization': 'Bearer abc'}


def test_token_with_a_scheme_gives_that_scheme() -> None:
    info = kopf.ConnectionInfo(server='https://k8s', token='abc', scheme='Digest')
    assert info.as_http_headers() == {'Authorization': 'Digest abc'}


def test_username_and_password_give_a_basic_header() -> None:
    info = kopf.ConnectionInfo(server='https://k8s', username='user', password='pass')
    expected = base64.b64encode(b'user:pass').decode()
    assert info.as_http_headers() == {'Authorization': f'Basic {expected}'}


def test_no_credentials_give_no_headers() -> None:
    assert kopf.ConnectionInfo(server='https://k8s').as_http_headers() == {}


def test_ssl_context_verifies_by_default() -> None:
    context = kopf.ConnectionInfo(server='https://k8s').as_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname


def test_ssl_context_of_insecure_credentials_does_not_verify() -> None:
    context = kopf.ConnectionInfo(server='https://k8s', insecure=True).as_ssl_context()
    assert context.verify_mode == ssl.CERT_NONE
    assert not context.check_hostname


def test_ssl_context_refuses_a_non_boolean_insecure() -> None:
    info = kopf.ConnectionInfo(server='https://k8s', insecure='false')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ConnectionInfo.insecure must be True, False, or None, not 'false'"):
        info.as_ssl_context()


def test_basic_auth_is_none_without_a_username() -> None:
    assert kopf.ConnectionInfo(server='https://k8s', token='abc').as_aiohttp_basic_auth() is None


def test_basic_auth_without_aiohttp_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'aiohttp', None)  # importing it fails, as if it is not installed
    info = kopf.ConnectionInfo(server='https://k8s', username='user', password='pass')
    with pytest.raises(ImportError, match=r"needs aiohttp: pip install aiohttp"):
        info.as_aiohttp_basic_auth()


@pytest.mark.parametrize('password, expected', [('pass', 'pass'), (None, '')])
def test_basic_auth_with_aiohttp_is_its_basic_auth(
        monkeypatch: pytest.MonkeyPatch, password: Optional[str], expected: str,
) -> None:
    # Whether aiohttp is installed or not, the module that is imported is this one.
    aiohttp = types.SimpleNamespace(BasicAuth=lambda login, password: ('BasicAuth', login, password))
    monkeypatch.setitem(sys.modules, 'aiohttp', aiohttp)
    info = kopf.ConnectionInfo(server='https://k8s', username='user', password=password)
    assert info.as_aiohttp_basic_auth() == ('BasicAuth', 'user', expected)
