"""
The local webhook server: listening, TLS, routing, and serving the reviews.

Every test runs a real server on 127.0.0.1 and talks to it over real sockets;
the TLS connections are verified against the CA from the yielded client config.
Only the framework's function is a fake (see ``conftest.py``).
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import datetime
import ipaddress
import logging
import os
import pathlib
import socket
import ssl
import subprocess
import urllib.parse
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Tuple

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import kopf
from kopf_webhooks import WebhookServer
from kopf_webhooks._requests import MAX_REVIEW_SIZE


async def test_server_yields_an_https_url_once_listening(start: Any, post: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    assert client_config['url'].startswith('https://127.0.0.1:')
    reply = await post(client_config)
    assert reply.status == 200


async def test_server_listens_on_a_free_port_if_none_is_given(start: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    port = int(client_config['url'].rsplit(':', 1)[1])
    assert port > 0


async def test_server_listens_on_the_given_port(start: Any) -> None:
    with socket.socket() as sock:  # find a port that is free right now
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    client_config = await start(WebhookServer(addr='127.0.0.1', port=port))
    assert client_config['url'] == f'https://127.0.0.1:{port}'


async def test_server_url_uses_the_host_override(start: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', host='example.com', path='/admission'))
    assert client_config['url'].startswith('https://example.com:')
    assert client_config['url'].endswith('/admission')


@pytest.mark.parametrize('addr, host', [
    pytest.param('0.0.0.0', '127.0.0.1', id='ipv4'),
    pytest.param('::', '[::1]', id='ipv6'),
])
async def test_server_url_uses_the_loopback_when_listening_on_all_interfaces(
        start: Any, post: Any, addr: str, host: str,
) -> None:
    client_config = await start(WebhookServer(addr=addr))
    assert client_config['url'].startswith(f'https://{host}:')
    reply = await post(client_config)
    assert reply.status == 200


@pytest.mark.parametrize('loopback', [
    pytest.param('127.0.0.1', id='ipv4'),
    pytest.param('[::1]', id='ipv6'),
])
async def test_server_listens_on_one_port_of_all_interfaces_by_default(
        start: Any, post: Any, loopback: str,
) -> None:
    client_config = await start(WebhookServer(insecure=True))
    port = client_config['url'].rsplit(':', 1)[1]
    assert client_config['url'] == f'http://localhost:{port}'
    reply = await post(client_config, url=f'http://{loopback}:{port}')
    assert reply.status == 200


async def test_server_url_brackets_ipv6_addresses(start: Any) -> None:
    if not socket.has_ipv6:
        pytest.fail("IPv6 is not supported on this machine.")
    client_config = await start(WebhookServer(addr='::1', insecure=True))
    assert client_config['url'].startswith('http://[::1]:')


async def test_self_signed_certificate_is_trusted_via_the_reported_ca_bundle(start: Any, post: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    reply = await post(client_config)  # fails with an SSL error if not trusted
    assert reply.status == 200


@pytest.mark.parametrize('hostname', [
    pytest.param('localhost', id='localhost'),
    pytest.param('127.0.0.1', id='loopback-ip'),
    pytest.param('extra.example.com', id='extra-san'),
    pytest.param('example.com', id='host'),
])
async def test_self_signed_certificate_is_valid_for_all_the_names(
        start: Any, post: Any, hostname: str,
) -> None:
    server = WebhookServer(addr='127.0.0.1', host='example.com', extra_sans=['extra.example.com'])
    client_config = await start(server)
    port = client_config['url'].rsplit(':', 1)[1]
    reply = await post(client_config, url=f'https://127.0.0.1:{port}', server_hostname=hostname)
    assert reply.status == 200


async def test_self_signed_certificate_is_not_valid_for_other_names(start: Any, post: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    port = client_config['url'].rsplit(':', 1)[1]
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await post(client_config, url=f'https://127.0.0.1:{port}', server_hostname='unknown.example.com')


async def test_self_signed_certificate_is_dumped_to_cadump(start: Any, tmp_path: pathlib.Path) -> None:
    cadump = tmp_path / 'ca.pem'
    client_config = await start(WebhookServer(addr='127.0.0.1', cadump=cadump))
    assert cadump.read_bytes() == base64.b64decode(client_config['caBundle'])
    assert cadump.read_bytes().startswith(b'-----BEGIN CERTIFICATE-----')


async def test_self_signed_key_is_encrypted_with_the_password(start: Any, post: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', password='secret'))
    reply = await post(client_config)  # the key could not be loaded without the same password
    assert reply.status == 200


@dataclasses.dataclass(frozen=True)
class CertificateAuthority:
    """A CA that issues server certificates, e.g. renewed ones that the same CA bundle verifies."""
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def create(cls, name: str = 'Test CA') -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert=cert, key=key)

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, *hostnames: str) -> Tuple[bytes, bytes]:
        """A server certificate for the hostnames: the chain (it & the CA) and its key, both PEM."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        sans: List[x509.GeneralName] = []
        for hostname in hostnames:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(hostname)))
            except ValueError:
                sans.append(x509.DNSName(hostname))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        chain = cert.public_bytes(serialization.Encoding.PEM) + self.pem
        pkey = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
        return chain, pkey


async def get_presented_certificate(client_config: kopf.WebhookClientConfig, cadata: bytes) -> x509.Certificate:
    """The certificate that the server presents to a new TLS connection (verified by the given CA)."""
    url = urllib.parse.urlsplit(client_config.get('url') or '')
    context = ssl.create_default_context(cadata=cadata.decode('ascii'))
    _, writer = await asyncio.open_connection(url.hostname, url.port, ssl=context, server_hostname=url.hostname)
    try:
        der = writer.get_extra_info('ssl_object').getpeercert(binary_form=True)
    finally:
        writer.close()
    return x509.load_der_x509_certificate(der)


def first_certificate(chain: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificates(chain)[0]


def write_certificate(tmp_path: pathlib.Path, chain: bytes, pkey: bytes, ca: Optional[bytes] = None) -> Dict[str, Any]:
    """Write the files as a mounted secret would have them; return the server's options for them."""
    (tmp_path / 'cert.pem').write_bytes(chain)
    (tmp_path / 'pkey.pem').write_bytes(pkey)
    options: Dict[str, Any] = {'certfile': tmp_path / 'cert.pem', 'pkeyfile': tmp_path / 'pkey.pem'}
    if ca is not None:
        (tmp_path / 'ca.pem').write_bytes(ca)
        options['cafile'] = tmp_path / 'ca.pem'
    return options


@pytest.mark.parametrize('source', ['cadata', 'cafile'])
async def test_given_ca_bundle_is_reported_with_a_given_certificate(
        start: Any, post: Any, tmp_path: pathlib.Path, source: str,
) -> None:
    ca = CertificateAuthority.create()
    chain, pkey = ca.issue('localhost')
    options = write_certificate(tmp_path, chain, pkey, ca=ca.pem)
    if source == 'cadata':
        options['cadata'] = ca.pem
        del options['cafile']
    client_config = await start(WebhookServer(addr='127.0.0.1', host='localhost', **options))
    assert base64.b64decode(client_config['caBundle']) == ca.pem
    reply = await post(client_config)  # trusting the reported CA only
    assert reply.status == 200


async def test_given_certificate_is_served_and_reported_as_the_ca_bundle_without_one(
        start: Any, post: Any, tmp_path: pathlib.Path,
) -> None:
    # As in Kopf: the certificate file (here, the chain with its CA) verifies itself.
    cert, pkey = WebhookServer.build_certificate(['localhost'], 'secret')
    options = write_certificate(tmp_path, cert, pkey)
    client_config = await start(WebhookServer(addr='127.0.0.1', host='localhost', password='secret', **options))
    assert base64.b64decode(client_config['caBundle']) == cert
    reply = await post(client_config)  # trusting the reported bundle only
    assert reply.status == 200


async def test_given_ca_bundle_is_not_reported_with_a_generated_certificate(
        start: Any, post: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    # As in Kopf: only the generated CA can verify the generated certificate; the given one is not reported.
    with caplog.at_level(logging.WARNING, logger='kopf.webhooks'):
        client_config = await start(WebhookServer(addr='127.0.0.1', cadata=b'-----FAKE CA-----'))
    assert base64.b64decode(client_config['caBundle']).startswith(b'-----BEGIN CERTIFICATE-----')
    reply = await post(client_config)
    assert reply.status == 200
    assert [record.getMessage() for record in caplog.records] == [
        "The generated certificate is verified by its generated CA: it goes to the webhooks' caBundle "
        "instead of the given cadata/cafile (provide certfile & pkeyfile to use those)."]


async def test_given_context_gets_the_given_certificate(start: Any, post: Any, tmp_path: pathlib.Path) -> None:
    # As in Kopf: the context is what the server starts with; its own settings (here, TLS 1.3 only) stay.
    ca = CertificateAuthority.create()
    chain, pkey = ca.issue('localhost')
    options = write_certificate(tmp_path, chain, pkey, ca=ca.pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    client_config = await start(WebhookServer(addr='127.0.0.1', host='localhost', context=context, **options))
    reply = await post(client_config)
    assert reply.status == 200
    old_client = ssl.create_default_context(cadata=ca.pem.decode('ascii'))
    old_client.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(aiohttp.ClientError):
        await post(client_config, context=old_client)


async def test_given_context_gets_a_generated_certificate_without_a_given_one(start: Any, post: Any) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    client_config = await start(WebhookServer(addr='127.0.0.1', context=context))
    reply = await post(client_config)  # trusting the generated CA, as reported
    assert reply.status == 200


def test_certfile_without_pkeyfile_is_rejected(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match=r"certfile= and pkeyfile="):
        WebhookServer(certfile=tmp_path / 'cert.pem')


def test_insecure_mode_with_a_context_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"insecure mode"):
        WebhookServer(insecure=True, context=ssl.create_default_context(ssl.Purpose.CLIENT_AUTH))


async def test_insecure_server_serves_plain_http_without_a_ca(start: Any, post: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', insecure=True))
    assert client_config['url'].startswith('http://127.0.0.1:')
    assert 'caBundle' not in client_config
    reply = await post(client_config)
    assert reply.status == 200


@pytest.mark.parametrize('path, suffix, webhook', [
    pytest.param(None, '/', None, id='root-slash'),
    pytest.param(None, '/validate1', 'validate1', id='root-handler'),
    pytest.param(None, '/fn/spec.field', 'fn/spec.field', id='root-nested'),
    pytest.param(None, '/a%20b', 'a b', id='root-urlencoded'),
    pytest.param('/admission', '', None, id='path-itself'),
    pytest.param('/admission', '/', None, id='path-slash'),
    pytest.param('/admission', '/validate1', 'validate1', id='path-handler'),
    pytest.param('admission/', '/validate1', 'validate1', id='path-unslashed'),
])
async def test_webhook_id_is_the_rest_of_the_path_after_the_root(
        start: Any, post: Any, fn: Any, path: Optional[str], suffix: str, webhook: Optional[str],
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', path=path))
    reply = await post(client_config, suffix)
    assert reply.status == 200
    assert [call['webhook'] for call in fn.calls] == [webhook]


async def test_requests_outside_of_the_root_path_are_not_found(start: Any, post: Any, fn: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', path='/admission'))
    url = client_config['url'].removesuffix('/admission')
    reply = await post(client_config, '/elsewhere/validate1', url=url)
    assert reply.status == 404
    assert fn.calls == []


async def test_review_is_passed_to_the_function_as_parsed_json(
        start: Any, post: Any, fn: Any, review: Dict[str, Any],
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    await post(client_config, '/validate1')
    assert [call['request'] for call in fn.calls] == [review]


async def test_response_of_the_function_is_returned_as_json(start: Any, post: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    reply = await post(client_config, '/validate1')
    assert reply.json() == {
        'apiVersion': 'admission.k8s.io/v1',
        'kind': 'AdmissionReview',
        'response': {'uid': '1ca13837-ad60-4c9e-abb8-86f29d6c0e84', 'allowed': True},
    }


async def test_headers_are_passed_to_the_function(start: Any, post: Any, fn: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    await post(client_config, '/validate1', headers={'Authorization': 'Bearer xyz'})
    assert fn.calls[0]['headers']['Authorization'] == 'Bearer xyz'
    assert fn.calls[0]['headers']['authorization'] == 'Bearer xyz'  # case-insensitive, as in HTTP


async def test_sslpeer_is_none_without_a_client_certificate(start: Any, post: Any, fn: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    await post(client_config, '/validate1')
    assert fn.calls[0]['sslpeer'] is None


def client_ca_options(source: str, cert: bytes, tmp_path: pathlib.Path) -> Dict[str, Any]:
    """The client CA (here, the client's self-signed certificate) given in each supported way."""
    if source == 'cadata':
        return {'verify_cadata': cert.decode('ascii')}
    if source == 'cafile':
        (tmp_path / 'client-ca.pem').write_bytes(cert)
        return {'verify_cafile': tmp_path / 'client-ca.pem'}
    # A CA directory as OpenSSL reads it: the files are named by the subject's hash.
    (tmp_path / 'cas').mkdir()
    (tmp_path / 'client-ca.pem').write_bytes(cert)
    subject_hash = subprocess.run(['openssl', 'x509', '-hash', '-noout', '-in', str(tmp_path / 'client-ca.pem')],
                                  check=True, capture_output=True, text=True).stdout.strip()
    (tmp_path / 'cas' / f'{subject_hash}.0').write_bytes(cert)
    return {'verify_capath': tmp_path / 'cas'}


@pytest.mark.parametrize('source', ['cadata', 'cafile', 'capath'])
async def test_sslpeer_is_the_verified_client_certificate(
        start: Any, post: Any, fn: Any, tmp_path: pathlib.Path, source: str,
        client_certificate: Tuple[bytes, bytes],
        trusting: Callable[[kopf.WebhookClientConfig], ssl.SSLContext],
) -> None:
    cert, pkey = client_certificate
    (tmp_path / 'client-cert.pem').write_bytes(cert)
    (tmp_path / 'client-key.pem').write_bytes(pkey)
    client_config = await start(WebhookServer(addr='127.0.0.1', **client_ca_options(source, cert, tmp_path)))
    context = trusting(client_config)
    context.load_cert_chain(tmp_path / 'client-cert.pem', tmp_path / 'client-key.pem')
    await post(client_config, '/validate1', context=context)
    assert fn.calls[0]['sslpeer']['subject'] == ((('commonName', 'Example Common Name'),),)


async def test_unverifiable_client_certificates_are_rejected(
        start: Any, post: Any, fn: Any, tmp_path: pathlib.Path,
        client_certificate: Tuple[bytes, bytes],
        trusting: Callable[[kopf.WebhookClientConfig], ssl.SSLContext],
) -> None:
    other_cert, _ = WebhookServer.build_certificate(['other.example.com'])
    cert, pkey = client_certificate
    (tmp_path / 'client-cert.pem').write_bytes(cert)
    (tmp_path / 'client-key.pem').write_bytes(pkey)
    client_config = await start(WebhookServer(addr='127.0.0.1', verify_cadata=other_cert.decode('ascii')))
    context = trusting(client_config)
    context.load_cert_chain(tmp_path / 'client-cert.pem', tmp_path / 'client-key.pem')
    with pytest.raises(aiohttp.ClientError):
        await post(client_config, '/validate1', context=context)
    assert fn.calls == []


@pytest.mark.parametrize('verify_mode', [
    pytest.param(None, id='default'),
    pytest.param(ssl.CERT_REQUIRED, id='required'),
])
@pytest.mark.parametrize('source', ['cadata', 'cafile', 'capath'])
async def test_clients_without_certificates_are_refused_when_a_client_ca_is_given(
        start: Any, post: Any, fn: Any, tmp_path: pathlib.Path, source: str,
        verify_mode: Optional[ssl.VerifyMode], client_certificate: Tuple[bytes, bytes],
) -> None:
    cert, _ = client_certificate
    options = client_ca_options(source, cert, tmp_path)
    client_config = await start(WebhookServer(addr='127.0.0.1', verify_mode=verify_mode, **options))
    with pytest.raises(aiohttp.ClientError):
        await post(client_config, '/validate1')  # without a client certificate
    assert fn.calls == []


@pytest.mark.parametrize('verify_mode', [
    pytest.param(ssl.CERT_OPTIONAL, id='optional'),
    pytest.param(ssl.CERT_NONE, id='none-as-optional'),  # as in Kopf
])
async def test_clients_without_certificates_are_served_when_allowed_explicitly(
        start: Any, post: Any, fn: Any, tmp_path: pathlib.Path, verify_mode: ssl.VerifyMode,
        client_certificate: Tuple[bytes, bytes],
        trusting: Callable[[kopf.WebhookClientConfig], ssl.SSLContext],
) -> None:
    cert, pkey = client_certificate
    (tmp_path / 'client-cert.pem').write_bytes(cert)
    (tmp_path / 'client-key.pem').write_bytes(pkey)
    server = WebhookServer(addr='127.0.0.1', verify_cadata=cert.decode('ascii'), verify_mode=verify_mode)
    client_config = await start(server)
    anonymous = await post(client_config, '/validate1')
    context = trusting(client_config)
    context.load_cert_chain(tmp_path / 'client-cert.pem', tmp_path / 'client-key.pem')
    identified = await post(client_config, '/validate1', context=context)
    assert (anonymous.status, identified.status) == (200, 200)
    assert fn.calls[0]['sslpeer'] is None
    assert fn.calls[1]['sslpeer']['subject'] == ((('commonName', 'Example Common Name'),),)


@pytest.mark.parametrize('data', [
    pytest.param(b'{not json', id='not-json'),
    pytest.param(b'\xff\xfe\x00', id='not-utf8'),
    pytest.param(b'[]', id='not-an-object'),
    pytest.param(b'{"kind": "AdmissionReview"}', id='no-request'),
    pytest.param(b'{"request": "hello"}', id='request-not-an-object'),
])
async def test_malformed_reviews_are_rejected_as_bad_requests(
        start: Any, post: Any, fn: Any, data: bytes,
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    reply = await post(client_config, '/validate1', data=data)
    assert reply.status == 400
    assert 'admission review' in reply.text
    assert fn.calls == []


async def test_reviews_refused_by_the_function_are_bad_requests_with_its_reason(
        start: Any, post: Any, fn: Any,
) -> None:
    fn.error = ValueError("The admission review's request has no 'uid'.")
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    reply = await post(client_config, '/validate1')
    assert reply.status == 400
    assert reply.text == "The admission review is malformed: The admission review's request has no 'uid'."


async def test_oversized_reviews_are_bad_requests_without_reaching_the_function(
        start: Any, post: Any, fn: Any,
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    reply = await post(client_config, '/validate1', data=b' ' * (MAX_REVIEW_SIZE + 1))
    assert reply.status == 400
    assert reply.text == f"The admission review is larger than the limit of {MAX_REVIEW_SIZE} bytes."
    assert fn.calls == []


async def test_failures_of_the_function_are_internal_server_errors(
        start: Any, post: Any, fn: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    fn.error = RuntimeError('boom')
    client_config = await start(WebhookServer(addr='127.0.0.1'))
    with caplog.at_level(logging.ERROR, logger='kopf.webhooks'):
        reply = await post(client_config, '/validate1')
    assert reply.status == 500
    assert 'boom' not in reply.text  # no internals leak to the clients
    assert [record.exc_info[1] for record in caplog.records if record.exc_info] == [fn.error]


async def test_server_stops_listening_when_the_iteration_is_closed(fn: Any) -> None:
    generator = WebhookServer(addr='127.0.0.1', insecure=True)(fn)
    client_config = await generator.__anext__()
    await generator.aclose()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorError):
            await session.post(client_config.get('url') or '', data=b'{}')


async def test_server_stops_listening_when_its_context_is_exited(fn: Any) -> None:
    async with WebhookServer(addr='127.0.0.1', insecure=True) as server:
        generator = server(fn)
        client_config = await generator.__anext__()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorError):
            await session.post(client_config.get('url') or '', data=b'{}')


def test_file_check_interval_is_a_minute_by_default() -> None:
    assert WebhookServer().file_check_interval == 60.0


@pytest.mark.parametrize('interval', [0, -1, float('nan')])
def test_file_check_interval_must_be_positive(interval: float) -> None:
    with pytest.raises(ValueError, match=r"file_check_interval"):
        WebhookServer(file_check_interval=interval)


def replace_file(path: pathlib.Path, content: bytes) -> None:
    """Replace the file atomically, as the kubelet updates the mounted secrets (a swap, not a rewrite)."""
    temporary = path.with_name(path.name + '.new')
    temporary.write_bytes(content)
    os.replace(temporary, path)


async def wait_for(condition: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "The condition was not met in time."
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def serving(server: WebhookServer, fn: Any) -> AsyncIterator[Tuple[kopf.WebhookClientConfig, asyncio.Task[Any]]]:
    """
    Serve as the operator does: iterate the server all the time, so that it follows its files.

    Yields the first client config and the task that awaits the next one.
    """
    async with server:
        generator = server(fn)
        client_config = await generator.__anext__()
        following = asyncio.create_task(generator.__anext__())
        try:
            yield client_config, following
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await following


async def test_renewed_certificate_is_served_to_new_connections(
        post: Any, fn: Any, tmp_path: pathlib.Path, review: Dict[str, Any],
) -> None:
    ca = CertificateAuthority.create()
    old_chain, old_pkey = ca.issue('127.0.0.1')
    new_chain, new_pkey = ca.issue('127.0.0.1')
    options = write_certificate(tmp_path, old_chain, old_pkey, ca=ca.pem)
    server = WebhookServer(addr='127.0.0.1', file_check_interval=0.1, **options)
    async with serving(server, fn) as (client_config, following):
        assert await get_presented_certificate(client_config, ca.pem) == first_certificate(old_chain)
        async with aiohttp.ClientSession() as session:  # a connection made before the renewal
            context = ssl.create_default_context(cadata=ca.pem.decode('ascii'))
            url = (client_config.get('url') or '') + '/validate1'
            async with session.post(url, json=review, ssl=context) as response:
                assert response.status == 200

            replace_file(tmp_path / 'pkey.pem', new_pkey)
            replace_file(tmp_path / 'cert.pem', new_chain)

            async def renewed() -> bool:
                return bool(await get_presented_certificate(client_config, ca.pem) == first_certificate(new_chain))
            await wait_for(renewed)

            async with session.post(url, json=review, ssl=context) as response:  # the old connection, kept alive
                assert response.status == 200
            assert len(session.connector._conns) == 1  # type: ignore[union-attr]  # the same one, reused
        assert not following.done()  # the same CA bundle: nothing to reconfigure


async def test_renewed_ca_bundle_is_yielded_in_a_new_client_config(
        post: Any, fn: Any, tmp_path: pathlib.Path,
) -> None:
    old_ca, new_ca = CertificateAuthority.create('Old CA'), CertificateAuthority.create('New CA')
    old_chain, old_pkey = old_ca.issue('127.0.0.1')
    options = write_certificate(tmp_path, old_chain, old_pkey, ca=old_ca.pem)
    server = WebhookServer(addr='127.0.0.1', file_check_interval=0.1, cadump=tmp_path / 'dump.pem', **options)
    async with serving(server, fn) as (client_config, following):
        assert base64.b64decode(client_config['caBundle']) == old_ca.pem
        new_chain, new_pkey = new_ca.issue('127.0.0.1')
        replace_file(tmp_path / 'ca.pem', new_ca.pem)
        replace_file(tmp_path / 'pkey.pem', new_pkey)
        replace_file(tmp_path / 'cert.pem', new_chain)
        renewed_config = await asyncio.wait_for(following, timeout=10)
        assert renewed_config['url'] == client_config['url']
        assert base64.b64decode(renewed_config['caBundle']) == new_ca.pem
        assert (tmp_path / 'dump.pem').read_bytes() == new_ca.pem
        reply = await post(renewed_config)  # trusting the new CA only
        assert reply.status == 200


async def test_renewed_ca_bundle_of_an_insecure_server_is_yielded(fn: Any, tmp_path: pathlib.Path) -> None:
    (tmp_path / 'ca.pem').write_bytes(b'-----OLD CA-----')
    server = WebhookServer(addr='127.0.0.1', insecure=True, cafile=tmp_path / 'ca.pem', file_check_interval=0.1)
    async with serving(server, fn) as (client_config, following):
        replace_file(tmp_path / 'ca.pem', b'-----NEW CA-----')
        renewed_config = await asyncio.wait_for(following, timeout=10)
        assert base64.b64decode(client_config['caBundle']) == b'-----OLD CA-----'
        assert base64.b64decode(renewed_config['caBundle']) == b'-----NEW CA-----'


async def test_unloadable_certificate_files_leave_the_previous_certificate_served(
        fn: Any, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture,
) -> None:
    ca = CertificateAuthority.create()
    old_chain, old_pkey = ca.issue('127.0.0.1')
    new_chain, new_pkey = ca.issue('127.0.0.1')
    options = write_certificate(tmp_path, old_chain, old_pkey, ca=ca.pem)
    server = WebhookServer(addr='127.0.0.1', file_check_interval=0.1, **options)
    with caplog.at_level(logging.WARNING, logger='kopf.webhooks'):
        async with serving(server, fn) as (client_config, following):
            replace_file(tmp_path / 'cert.pem', new_chain)  # but the old key: a mismatching pair for now

            async def warned() -> bool:
                return len(caplog.records) > 0
            await wait_for(warned)
            await asyncio.sleep(0.5)  # several checks
            assert await get_presented_certificate(client_config, ca.pem) == first_certificate(old_chain)

            (tmp_path / 'cert.pem').unlink()  # e.g. in the middle of a non-atomic update
            await asyncio.sleep(0.5)  # several checks
            assert await get_presented_certificate(client_config, ca.pem) == first_certificate(old_chain)

            replace_file(tmp_path / 'pkey.pem', new_pkey)
            replace_file(tmp_path / 'cert.pem', new_chain)

            async def renewed() -> bool:
                return bool(await get_presented_certificate(client_config, ca.pem) == first_certificate(new_chain))
            await wait_for(renewed)
            assert not following.done()

    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2  # once per problem, not at every check
    assert messages[0].startswith("The changed certificate files of the webhook server cannot be loaded: ")
    assert messages[1].startswith("The webhook server's certificate files cannot be read: ")
    assert all(message.endswith("; the previous certificate is still served.") for message in messages)


async def test_generated_certificates_have_no_files_to_follow(fn: Any) -> None:
    server = WebhookServer(addr='127.0.0.1', file_check_interval=0.01)
    async with serving(server, fn) as (_, following):
        await asyncio.sleep(0.2)
        assert not following.done()


async def test_unused_options_of_the_insecure_mode_are_reported(
        start: Any, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture,
) -> None:
    server = WebhookServer(addr='127.0.0.1', insecure=True, verify_mode=ssl.CERT_REQUIRED, password='x')
    with caplog.at_level(logging.WARNING, logger='kopf.webhooks'):
        await start(server)
    assert [record.getMessage() for record in caplog.records] == [
        "The insecure webhook server (plain HTTP) uses no password, verify_mode."]
