"""
No secrets in reprs, strings, or log lines of the objects that hold credentials (issue 27 §4).

Reprs reach error trackers, ``pytest --showlocals`` dumps, and log lines; every
object that holds a token, a password, or a private key is built here with
known secret strings, as the client builds them in real requests: the
credentials, the vault's items, the session pool's lease and its session, the
transport's reply, aiohttp's request info and errors (which keep the request's
headers, including ``Authorization``), the kubeconfig reader's items, and the
built-in logins' results.
Each is formatted with ``repr()``, ``str()``, and logged; the output is
scanned for the secrets. The requests go to a real local HTTP server.
"""
from __future__ import annotations

import asyncio
import base64
import logging
import pathlib
import subprocess
from typing import TYPE_CHECKING, Any, AsyncIterator, List

import aiohttp
import pytest
import yaml

import kopf
from kopf import clients
from kopf_client import AiohttpClient, _kubeconfig, login_with_kubeconfig
from kopf_client._serviceaccount import read_service_account
from kopf_client._sessions import SessionPool
from kopf_client._transport import Reply

if TYPE_CHECKING:
    from conftest import FakeApi

TOKEN = 'tok-SECRET-1d2e3f'
PASSWORD = 'pw-SECRET-4a5b6c'
BASIC = base64.b64encode(f'admin:{PASSWORD}'.encode()).decode()
KEY = clients.VaultKey('login_fn')


@pytest.fixture(scope='module')
def client_pem(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    """A real client certificate and private key: the sessions load them into their TLS contexts."""
    path = tmp_path_factory.mktemp('client-pki')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
                    '-nodes', '-keyout', 'client.key', '-out', 'client.crt', '-days', '1', '-subj', '/CN=client'],
                   cwd=path, check=True, capture_output=True)
    return (path / 'client.crt').read_bytes(), (path / 'client.key').read_bytes()


@pytest.fixture()
def secrets(client_pem: tuple[bytes, bytes]) -> List[str]:
    """The strings that must appear nowhere: whole, or as the lines of the key's PEM body."""
    _, key = client_pem
    key_lines = [line for line in key.decode().splitlines() if line and not line.startswith('-----')]
    return [TOKEN, PASSWORD, BASIC, base64.b64encode(key).decode(), *key_lines]


@pytest.fixture()
def info(api: FakeApi, client_pem: tuple[bytes, bytes]) -> kopf.ConnectionInfo:
    """Credentials with every secret field set."""
    cert, key = client_pem
    return kopf.ConnectionInfo(server=api.url, username='admin', password=PASSWORD, scheme='Bearer', token=TOKEN,
                               certificate_data=cert, private_key_data=key)


@pytest.fixture()
async def pool() -> AsyncIterator[SessionPool]:
    pool = SessionPool()
    yield pool
    await pool.close()


def _assert_hidden(objects: List[Any], secrets: List[str], caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger('test.secrets')
    with caplog.at_level(logging.DEBUG, logger='test.secrets'):
        for obj in objects:
            logger.info("%r", obj)
            logger.info("%s", obj)
            logger.info(f"{obj!r} {obj}")
    texts = [repr(obj) for obj in objects] + [str(obj) for obj in objects] + [caplog.text]
    assert len(caplog.records) == 3 * len(objects)
    leaks = [(secret, text) for secret in secrets for text in texts if secret in text]
    assert not leaks


async def test_no_secrets_in_the_credentials_and_the_vault(
        info: kopf.ConnectionInfo, secrets: List[str], caplog: pytest.LogCaptureFixture,
) -> None:
    vault = clients.Vault({KEY: info})
    key, selected = await vault.select()
    _assert_hidden([info, vault, selected, (key, selected)], secrets, caplog)


@pytest.mark.parametrize('kind', ['bearer', 'basic'])
async def test_no_secrets_in_the_lease_its_session_and_the_reply(
        api: FakeApi, info: kopf.ConnectionInfo, pool: SessionPool, secrets: List[str],
        caplog: pytest.LogCaptureFixture, kind: str,
) -> None:
    if kind == 'basic':  # the password goes into the header only without a token
        info = kopf.ConnectionInfo(server=info.server, username='admin', password=PASSWORD)
    api.add('/version', {'major': '1'})
    lease = await pool.lease(KEY, info)
    async with lease.session.get(f'{api.url}/version') as response:
        payload = await response.json()
        reply = Reply(response=response, payload=payload, lease=lease)
        objects = [lease, lease.session, lease.session.headers, reply, response, response.request_info]
        _assert_hidden(objects, secrets, caplog)
    await pool.give_back(lease)
    sent = api.requests[0].headers['Authorization']
    assert sent == (f'Bearer {TOKEN}' if kind == 'bearer' else f'Basic {BASIC}')  # sent as it is


async def test_no_secrets_in_aiohttp_errors_that_keep_the_request_headers(
        info: kopf.ConnectionInfo, pool: SessionPool, secrets: List[str], caplog: pytest.LogCaptureFixture,
) -> None:
    async def respond_malformed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b'\r\n\r\n')
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n')
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(respond_malformed, '127.0.0.1', 0)
    port = server.sockets[0].getsockname()[1]
    lease = await pool.lease(KEY, info)
    try:
        with pytest.raises(aiohttp.ClientResponseError) as err:
            async with lease.session.get(f'http://127.0.0.1:{port}/version'):
                pass
    finally:
        await pool.give_back(lease)
        server.close()
        await server.wait_closed()
    assert 'Authorization' in repr(err.value.request_info.headers)  # the header is there, but hidden
    _assert_hidden([err.value, err.value.request_info, err.value.request_info.headers], secrets, caplog)


async def test_no_secrets_in_the_client_and_the_requests_it_has_made(
        api: FakeApi, info: kopf.ConnectionInfo, secrets: List[str], caplog: pytest.LogCaptureFixture,
) -> None:
    namespaces = kopf.Resource('', 'v1', 'namespaces', kind='Namespace', namespaced=False)
    api.add('/api/v1/namespaces/default', {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'default'}})
    async with AiohttpClient(vault=clients.Vault({KEY: info}), settings=kopf.OperatorSettings()) as client:
        await client.get_object(namespaces, namespace=None, name='default')
        _assert_hidden([client], secrets, caplog)
    assert api.requests[0].headers['Authorization'] == f'Bearer {TOKEN}'


def test_no_secrets_in_the_kubeconfig_reader_and_its_results(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, client_pem: tuple[bytes, bytes],
        secrets: List[str], caplog: pytest.LogCaptureFixture,
) -> None:
    cert, key = client_pem
    path = tmp_path / 'config'
    path.write_text(yaml.safe_dump({
        'current-context': 'dev',
        'clusters': [{'name': 'dev', 'cluster': {'server': 'https://k8s.example'}}],
        'users': [{'name': 'dev', 'user': {
            'token': TOKEN, 'username': 'admin', 'password': PASSWORD,
            'client-certificate-data': base64.b64encode(cert).decode(),
            'client-key-data': base64.b64encode(key).decode(),
        }}],
        'contexts': [{'name': 'dev', 'context': {'cluster': 'dev', 'user': 'dev'}}],
    }))
    monkeypatch.setenv('KUBECONFIG', str(path))
    config = _kubeconfig._load(path)
    info = login_with_kubeconfig()
    assert info is not None and info.token == TOKEN
    _assert_hidden([config, *config.users.values(), info], secrets, caplog)


def test_no_secrets_in_the_service_account_login(
        tmp_path: pathlib.Path, secrets: List[str], caplog: pytest.LogCaptureFixture,
) -> None:
    (tmp_path / 'token').write_text(TOKEN)
    info = read_service_account(tmp_path, {'KUBERNETES_SERVICE_HOST': '10.96.0.1'})
    assert info is not None and info.token == TOKEN
    _assert_hidden([info], secrets, caplog)
