"""
TLS: the trusted CA, the verification, and the client certificates.

A real TLS server on localhost requires a client certificate signed by a
test CA; the certificates are generated once per session with the
``openssl`` command-line tool. A successful request proves both directions:
the client trusted the server, and the server accepted the client.
"""
from __future__ import annotations

import dataclasses
import logging
import pathlib
import ssl
import subprocess
import tempfile
from typing import TYPE_CHECKING, Any, Dict

import aiohttp
import pytest

import kopf
from kopf import clients
from kopf_client import AiohttpClient
from kopf_client._tls import make_ssl_context, warn_if_insecure

if TYPE_CHECKING:
    from conftest import ApiFactory, FakeApi

NAMESPACES = kopf.Resource('', 'v1', 'namespaces', kind='Namespace', namespaced=False)
NS_PATH = '/api/v1/namespaces/default'
NS = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'default'}}


@dataclasses.dataclass(frozen=True)
class Pki:
    ca_crt: pathlib.Path
    server_crt: pathlib.Path
    server_key: pathlib.Path
    client_crt: pathlib.Path
    client_key: pathlib.Path


def _openssl(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run(['openssl', *args], cwd=cwd, check=True, capture_output=True)


def _issue(name: str, ext: str, *, cwd: pathlib.Path) -> None:
    _openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
             '-keyout', f'{name}.key', '-out', f'{name}.csr', '-subj', f'/CN={name}', cwd=cwd)
    (cwd / f'{name}.ext').write_text(
        f'{ext}\nbasicConstraints=CA:FALSE\n'
        'subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n')
    _openssl('x509', '-req', '-in', f'{name}.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
             '-days', '2', '-out', f'{name}.crt', '-extfile', f'{name}.ext', cwd=cwd)


@pytest.fixture(scope='session')
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    path = tmp_path_factory.mktemp('pki')
    _openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
             '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=test-ca',
             '-addext', 'basicConstraints=critical,CA:TRUE',
             '-addext', 'keyUsage=critical,keyCertSign,cRLSign', cwd=path)
    _issue('server', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth', cwd=path)
    _issue('client', 'extendedKeyUsage=clientAuth', cwd=path)
    return Pki(
        ca_crt=path / 'ca.crt',
        server_crt=path / 'server.crt', server_key=path / 'server.key',
        client_crt=path / 'client.crt', client_key=path / 'client.key',
    )


@pytest.fixture()
async def tls_api(api_factory: ApiFactory, pki: Pki) -> FakeApi:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca_crt))
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_cert_chain(str(pki.server_crt), str(pki.server_key))
    api = await api_factory(ssl=context)
    api.add(NS_PATH, NS)
    return api


async def _get_namespace(settings: kopf.OperatorSettings, info: kopf.ConnectionInfo) -> Any:
    settings.networking.error_backoffs = []  # TLS failures are retried, but not in these tests
    vault = clients.Vault({'tls': info})
    async with AiohttpClient(vault=vault, settings=settings) as client:
        return await client.get_object(NAMESPACES, namespace=None, name='default')


def _client_cert(pki: Pki, *, as_data: bool) -> Dict[str, Any]:
    if as_data:
        return dict(certificate_data=pki.client_crt.read_bytes(), private_key_data=pki.client_key.read_bytes())
    return dict(certificate_path=str(pki.client_crt), private_key_path=str(pki.client_key))


@pytest.mark.parametrize('as_data', [pytest.param(False, id='paths'), pytest.param(True, id='data')])
async def test_ca_and_client_certificate_are_used(
        tls_api: FakeApi, pki: Pki, settings: kopf.OperatorSettings, as_data: bool,
) -> None:
    ca: Dict[str, Any] = dict(ca_data=pki.ca_crt.read_bytes()) if as_data else dict(ca_path=str(pki.ca_crt))
    info = kopf.ConnectionInfo(server=tls_api.url, **ca, **_client_cert(pki, as_data=as_data))
    assert await _get_namespace(settings, info) == NS


async def test_ca_data_in_der_format_is_accepted(tls_api: FakeApi, pki: Pki, settings: kopf.OperatorSettings) -> None:
    der = ssl.PEM_cert_to_DER_cert(pki.ca_crt.read_text())
    info = kopf.ConnectionInfo(server=tls_api.url, ca_data=der, **_client_cert(pki, as_data=False))
    assert await _get_namespace(settings, info) == NS


async def test_unknown_server_ca_fails_the_verification(
        tls_api: FakeApi, pki: Pki, settings: kopf.OperatorSettings,
) -> None:
    info = kopf.ConnectionInfo(server=tls_api.url, **_client_cert(pki, as_data=False))
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _get_namespace(settings, info)


async def test_insecure_credentials_skip_the_verification(
        tls_api: FakeApi, pki: Pki, settings: kopf.OperatorSettings,
) -> None:
    info = kopf.ConnectionInfo(server=tls_api.url, insecure=True, **_client_cert(pki, as_data=False))
    assert await _get_namespace(settings, info) == NS


async def test_missing_client_certificate_is_rejected_by_the_server(
        tls_api: FakeApi, pki: Pki, settings: kopf.OperatorSettings,
) -> None:
    info = kopf.ConnectionInfo(server=tls_api.url, ca_path=str(pki.ca_crt))
    with pytest.raises(aiohttp.ClientError):
        await _get_namespace(settings, info)


def test_in_memory_certificates_leave_no_files_behind(
        pki: Pki, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    make_ssl_context(kopf.ConnectionInfo(server='https://localhost', **_client_cert(pki, as_data=True)))
    assert list(tmp_path.iterdir()) == []


def test_insecure_context_checks_neither_hostname_nor_certificates() -> None:
    context = make_ssl_context(kopf.ConnectionInfo(server='https://localhost', insecure=True))
    assert not context.check_hostname
    assert context.verify_mode == ssl.CERT_NONE


def test_secure_context_checks_both_hostname_and_certificates() -> None:
    context = make_ssl_context(kopf.ConnectionInfo(server='https://localhost'))
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED


# Insecure credentials are said aloud, once (issue 27 §2).

async def test_insecure_credentials_of_a_login_handler_are_warned_about_once(
        tls_api: FakeApi, pki: Pki, settings: kopf.OperatorSettings, caplog: pytest.LogCaptureFixture,
) -> None:
    info = kopf.ConnectionInfo(server=tls_api.url, insecure=True, **_client_cert(pki, as_data=False))
    tls_api.add(NS_PATH, NS)
    settings.networking.error_backoffs = []
    with caplog.at_level(logging.WARNING):
        async with AiohttpClient(vault=clients.Vault({'tls': info}), settings=settings) as client:
            await client.get_object(NAMESPACES, namespace=None, name='default')
            await client.get_object(NAMESPACES, namespace=None, name='default')  # the same session
    assert [(r.name, r.levelno, r.message) for r in caplog.records] == [
        ('kopf_client._tls', logging.WARNING,
         f"TLS verification is off for {tls_api.url} (insecure=True in the login handler's ConnectionInfo): "
         f"the server's certificate is not checked, so the credentials go to whoever answers at this address. "
         f"Give the server's CA instead (certificate-authority in a kubeconfig, ca_path or ca_data in a "
         f"ConnectionInfo)."),
    ]


def test_insecure_credentials_warned_about_by_their_login_are_not_warned_about_again(
        caplog: pytest.LogCaptureFixture,
) -> None:
    info = kopf.ConnectionInfo(server='https://localhost', insecure=True)
    logger = logging.getLogger('test.login')
    with caplog.at_level(logging.WARNING):
        warn_if_insecure(info, logger=logger, source="the cluster 'dev' of the context 'dev' in /kubeconfig")
        make_ssl_context(info)
    assert [(r.name, r.levelno) for r in caplog.records] == [('test.login', logging.WARNING)]
    assert "(the cluster 'dev' of the context 'dev' in /kubeconfig)" in caplog.messages[0]


def test_equal_insecure_credentials_of_another_login_are_warned_about_again(
        caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        make_ssl_context(kopf.ConnectionInfo(server='https://localhost', insecure=True))
        make_ssl_context(kopf.ConnectionInfo(server='https://localhost', insecure=True))
    assert len(caplog.records) == 2


@pytest.mark.parametrize('insecure', [None, False])
def test_secure_credentials_are_not_warned_about(caplog: pytest.LogCaptureFixture, insecure: Any) -> None:
    with caplog.at_level(logging.DEBUG):
        make_ssl_context(kopf.ConnectionInfo(server='https://localhost', insecure=insecure))
    assert not caplog.records


@pytest.mark.parametrize('insecure', ['false', 'true', 0, 1])
def test_insecure_flag_that_is_not_a_boolean_is_refused(insecure: Any) -> None:
    # E.g. a login handler that passes a config value as it was read: "false" is truthy.
    with pytest.raises(ValueError, match=r"ConnectionInfo.insecure must be True, False, or None, not "):
        make_ssl_context(kopf.ConnectionInfo(server='https://localhost', insecure=insecure))
