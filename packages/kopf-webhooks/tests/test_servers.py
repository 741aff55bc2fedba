"""
The local webhook server: listening, TLS, routing, and serving the reviews.

Every test runs a real server on 127.0.0.1 and talks to it over real sockets;
the TLS connections are verified against the CA from the yielded client config.
Only the framework's function is a fake (see ``conftest.py``).
"""
from __future__ import annotations

import base64
import logging
import pathlib
import socket
import ssl
import subprocess
from typing import Any, Callable, Dict, Optional, Tuple

import aiohttp
import pytest

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


async def test_server_url_uses_localhost_when_listening_on_all_interfaces(start: Any) -> None:
    client_config = await start(WebhookServer(addr='0.0.0.0'))
    assert client_config['url'].startswith('https://localhost:')


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


async def test_given_cadata_is_reported_as_the_ca_bundle(start: Any) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', cadata=b'-----FAKE CA-----'))
    assert base64.b64decode(client_config['caBundle']) == b'-----FAKE CA-----'


async def test_given_cafile_is_reported_as_the_ca_bundle(start: Any, tmp_path: pathlib.Path) -> None:
    cafile = tmp_path / 'ca.pem'
    cafile.write_bytes(b'-----FAKE CA-----')
    client_config = await start(WebhookServer(addr='127.0.0.1', cafile=cafile))
    assert base64.b64decode(client_config['caBundle']) == b'-----FAKE CA-----'


async def test_given_certificate_is_served_and_no_ca_is_reported(
        start: Any, post: Any, tmp_path: pathlib.Path,
) -> None:
    cert, pkey = WebhookServer.build_certificate(['localhost'], 'secret')
    (tmp_path / 'cert.pem').write_bytes(cert)
    (tmp_path / 'pkey.pem').write_bytes(pkey)
    server = WebhookServer(
        addr='127.0.0.1', host='localhost', password='secret',
        certfile=tmp_path / 'cert.pem', pkeyfile=tmp_path / 'pkey.pem',
    )
    client_config = await start(server)
    assert 'caBundle' not in client_config  # the default trust chain is assumed
    reply = await post(client_config, context=ssl.create_default_context(cadata=cert.decode('ascii')))
    assert reply.status == 200


async def test_given_context_is_used_as_is(start: Any, post: Any, tmp_path: pathlib.Path) -> None:
    cert, pkey = WebhookServer.build_certificate(['localhost'])
    (tmp_path / 'cert.pem').write_bytes(cert)
    (tmp_path / 'pkey.pem').write_bytes(pkey)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / 'cert.pem', tmp_path / 'pkey.pem')
    client_config = await start(WebhookServer(addr='127.0.0.1', host='localhost', context=context))
    reply = await post(client_config, context=ssl.create_default_context(cadata=cert.decode('ascii')))
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


async def test_client_certificates_are_required_in_the_required_mode(
        start: Any, post: Any, fn: Any, client_certificate: Tuple[bytes, bytes],
) -> None:
    cert, _ = client_certificate
    server = WebhookServer(addr='127.0.0.1', verify_cadata=cert.decode('ascii'), verify_mode=ssl.CERT_REQUIRED)
    client_config = await start(server)
    with pytest.raises(aiohttp.ClientError):
        await post(client_config, '/validate1')  # without a client certificate
    assert fn.calls == []


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
