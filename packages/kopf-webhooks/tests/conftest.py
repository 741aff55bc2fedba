"""
Shared fixtures: a recording admission function, running servers, clients.

The servers are real: they listen on 127.0.0.1 with real (generated) TLS
certificates, and the requests go through real sockets with aiohttp, verified
against the CA that the servers report. Only the framework's function is fake:
it records what it was called with and allows everything.
"""
from __future__ import annotations

import base64
import collections.abc
import copy
import dataclasses
import datetime
import io
import json
import ssl
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Mapping, Optional, Tuple

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import kopf

REVIEW: Dict[str, Any] = {
    'apiVersion': 'admission.k8s.io/v1',
    'kind': 'AdmissionReview',
    'request': {
        'uid': '1ca13837-ad60-4c9e-abb8-86f29d6c0e84',
        'kind': {'group': 'kopf.dev', 'version': 'v1', 'kind': 'KopfExample'},
        'resource': {'group': 'kopf.dev', 'version': 'v1', 'resource': 'kopfexamples'},
        'name': 'kopf-example-1',
        'namespace': 'default',
        'operation': 'CREATE',
        'userInfo': {'username': 'admin'},
        'object': {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'kopf-example-1'}},
        'oldObject': None,
        'dryRun': False,
    },
}


class RecordingFn:
    """A fake of the framework's function: remembers the calls, allows everything."""

    def __init__(self) -> None:
        self.calls: List[Dict[str, Any]] = []
        self.error: Optional[Exception] = None

    async def __call__(
            self,
            request: Any,
            *,
            webhook: Optional[str] = None,
            headers: Optional[Mapping[str, str]] = None,
            sslpeer: Optional[Mapping[str, Any]] = None,
    ) -> Any:
        self.calls.append({'request': request, 'webhook': webhook, 'headers': headers, 'sslpeer': sslpeer})
        if self.error is not None:
            raise self.error
        return {
            'apiVersion': 'admission.k8s.io/v1',
            'kind': 'AdmissionReview',
            'response': {'uid': request['request']['uid'], 'allowed': True},
        }


@pytest.fixture()
def fn() -> RecordingFn:
    return RecordingFn()


@pytest.fixture()
async def start(
        fn: RecordingFn,
) -> AsyncIterator[Callable[[kopf.WebhookServerProtocol], Awaitable[kopf.WebhookClientConfig]]]:
    """Start a server until it reports its client config; stop it after the test."""
    generators: List[AsyncIterator[kopf.WebhookClientConfig]] = []

    async def start_server(server: kopf.WebhookServerProtocol) -> kopf.WebhookClientConfig:
        generator = server(fn)
        generators.append(generator)
        return await generator.__anext__()

    yield start_server
    for generator in generators:
        assert isinstance(generator, collections.abc.AsyncGenerator)  # as all our servers are
        await generator.aclose()


@pytest.fixture()
def review() -> Dict[str, Any]:
    return copy.deepcopy(REVIEW)


@dataclasses.dataclass(frozen=True)
class Reply:
    status: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


PostFn = Callable[..., Awaitable[Reply]]


@pytest.fixture()
def post(review: Dict[str, Any]) -> PostFn:
    """
    Send a review (or raw data) to a URL, by default trusting only the reported CA.

    The URL is either given or taken from the client config, plus the suffix.
    """

    async def post_review(
            client_config: kopf.WebhookClientConfig,
            suffix: str = '',
            *,
            data: Optional[bytes] = None,
            url: Optional[str] = None,
            context: Optional[ssl.SSLContext] = None,
            server_hostname: Optional[str] = None,
            headers: Optional[Mapping[str, str]] = None,
    ) -> Reply:
        if context is None and 'caBundle' in client_config:
            context = make_client_context(client_config)
        target = (url or client_config.get('url') or '') + suffix
        body = json.dumps(review).encode('utf-8') if data is None else data
        async with aiohttp.ClientSession() as session:
            async with session.post(
                target, data=io.BytesIO(body), ssl=context if context is not None else True,
                server_hostname=server_hostname, headers=headers,
            ) as response:
                return Reply(status=response.status, text=await response.text())

    return post_review


@pytest.fixture()
def client_certificate() -> Tuple[bytes, bytes]:
    """A self-signed client certificate and its key, to authenticate to the servers."""
    pkey = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'Example Common Name')])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(pkey.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(pkey.public_key()), critical=False)
        .sign(pkey, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    pkey_pem = pkey.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return cert_pem, pkey_pem


def make_client_context(client_config: kopf.WebhookClientConfig) -> ssl.SSLContext:
    """A client's SSL context that trusts only the CA the server reports."""
    cadata = base64.b64decode(client_config['caBundle']).decode('ascii')
    return ssl.create_default_context(cadata=cadata)


@pytest.fixture()
def trusting() -> Callable[[kopf.WebhookClientConfig], ssl.SSLContext]:
    """Make a client's SSL context that trusts only the CA the server reports."""
    return make_client_context
