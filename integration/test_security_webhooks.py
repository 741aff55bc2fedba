"""
The webhook server under attack and in rotation, with the real API server (issue 27 §3, issue 22).

Inputs: an operator (written by this module, run by ``kopf run``) with one
validating handler for a CRD of this module, served by ``kopf.WebhookServer`` on
127.0.0.1 at a known port: with a generated certificate, or with certificate files
issued by a CA of the test (re-read every second), or requiring client
certificates. Outputs: what ``kubectl`` prints (the handler's warning means the
API server reached the webhook), the managed configurations, the operator's log,
the certificates the server presents, and how long the server keeps the
connections of slow clients.

The attacking clients are plain sockets in this process; the API server is the
local control plane's. The time limits are the defaults (5 s for a TLS handshake
and for a request's head), except the body's, which the operator shortens to 3 s.
"""
import base64
import concurrent.futures
import datetime
import ipaddress
import json
import os
import pathlib
import random
import socket
import ssl
import subprocess
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, Callable, Optional

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import OperatorProcess
from integration.probes import free_port

GROUP = 'security.kopf.dev'
PLURAL = 'securityobjs'
KIND = 'SecurityObj'
RESOURCE = f'{PLURAL}.{GROUP}'

HEAD_TIMEOUT = 5.0  # the default
BODY_TIMEOUT = 3.0  # the operator's own
LINGERING_TIME = 2.0
MARGIN = 5.0  # for a busy machine; the attacks would hold the connections for as long as they like

MAX_REVIEW_SIZE = 8 * 1024 * 1024

OPERATOR = textwrap.dedent('''
    """The webhook server of the security tests, as configured by the environment."""
    import asyncio
    import os
    import time

    import kopf

    TASKS = []


    @kopf.on.startup()
    async def configure(settings: kopf.OperatorSettings, **_):
        server = kopf.WebhookServer(
            addr='127.0.0.1', host='127.0.0.1', port=int(os.environ['PORT']),
            certfile=os.environ.get('CERTFILE'), pkeyfile=os.environ.get('PKEYFILE'),
            cafile=os.environ.get('CAFILE'), verify_cafile=os.environ.get('CLIENT_CA'),
            file_check_interval=float(os.environ.get('FILE_CHECK_INTERVAL', '60')),
        )
        if 'BODY_TIMEOUT' in os.environ:
            server.body_timeout = float(os.environ['BODY_TIMEOUT'])
        settings.admission.server = server
        settings.admission.managed = os.environ.get('ADMISSION_MANAGED')
        if 'LAG_FILE' in os.environ:
            TASKS.append(asyncio.create_task(record_the_lag(os.environ['LAG_FILE'])))


    async def record_the_lag(path):
        """The CPU time of the loop's thread between two ticks 1 ms apart, when above 5 ms."""
        with open(path, 'a', buffering=1) as f:
            while True:
                cpu = time.thread_time()
                await asyncio.sleep(0.001)
                lag = time.thread_time() - cpu
                if lag > 0.005:
                    f.write(f"{time.monotonic()} {lag}\\n")


    @kopf.on.cleanup()
    async def stop_recording(**_):
        for task in TASKS:
            task.cancel()


    @kopf.on.validate('%(plural)s.%(group)s', id='checking')
    def checking(spec, sslpeer, warnings, logger, **_):
        peer = dict(pair[0] for pair in sslpeer['subject'])['commonName'] if sslpeer else None
        logger.info(f"Checked: samples={len(spec.get('samples') or [])}, peer={peer}.")
        warnings.append(f"Checked by the operator, peer={peer}.")
''') % {'plural': PLURAL, 'group': GROUP}

Object = dict[str, Any]


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    kubeobjects.apply_crds(cluster, kubeobjects.crd_manifest(GROUP, PLURAL, KIND))


class CertificateAuthority:
    """A CA of the test, issuing the server's and the clients' certificates."""

    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (self._builder(subject, subject, self.key.public_key())
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
                     .sign(self.key, hashes.SHA256()))
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    @staticmethod
    def _builder(subject: x509.Name, issuer: x509.Name, public_key: Any) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.timezone.utc)
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(hours=1)))

    def issue(self, name: str, *, client: bool = False) -> tuple[bytes, bytes, x509.Certificate]:
        """A certificate's chain (it & this CA) and key, PEM-encoded; and the certificate itself."""
        key = ec.generate_private_key(ec.SECP256R1())
        builder = self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]),
                                self.cert.subject, key.public_key())
        if client:
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        else:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(name))]),
                                            critical=False)
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        chain = cert.public_bytes(serialization.Encoding.PEM) + self.pem
        pkey = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
        return chain, pkey, cert


def replace_file(path: pathlib.Path, content: bytes) -> None:
    """Replace the file at once, as the kubelet updates the mounted secrets."""
    path.with_name(path.name + '.new').write_bytes(content)
    os.replace(path.with_name(path.name + '.new'), path)


@pytest.fixture
def managed(cluster: Cluster, namespace: str) -> Iterator[str]:
    """The name of the managed configurations; they are deleted after the test, whatever remains."""
    name = f'{namespace}.kopf.dev'
    yield name
    for kind in ('validatingwebhookconfiguration', 'mutatingwebhookconfiguration'):
        cluster.kubectl('delete', kind, name, '--ignore-not-found')


@pytest.fixture
def start_operator(namespace: str, tmp_path: pathlib.Path) -> Iterator[Callable[..., OperatorProcess]]:
    """Start the module's operator with the given environment; stop it after the test."""
    (tmp_path / 'operator.py').write_text(OPERATOR)
    processes: list[OperatorProcess] = []

    def start(**env: str) -> OperatorProcess:
        process = OperatorProcess([str(tmp_path / 'operator.py'), '-n', namespace, '--verbose'],
                                  log_path=tmp_path / f'operator{len(processes)}.log', env=env)
        processes.append(process)
        process.start()
        process.wait_for(rf"Listening for webhooks at https://127\.0\.0\.1:{env['PORT']}", timeout=60)
        if 'ADMISSION_MANAGED' in env:
            process.wait_for(r"The ValidatingWebhookConfiguration '[^']+' is (created|patched)", timeout=60)
        return process

    yield start
    for process in processes:
        process.stop()


def manifest(name: str, **spec: Any) -> Object:
    return {'apiVersion': f'{GROUP}/v1', 'kind': KIND, 'metadata': {'name': name}, 'spec': spec}


def kubectl_create(cluster: Cluster, namespace: str, obj: Object, *args: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl('create', '-n', namespace, '-f', '-', *args, input=json.dumps(obj), check=False)


def wait_until_admitted(cluster: Cluster, namespace: str, *, timeout: float = 60) -> None:
    """Until the API server calls the webhook and gets its answer (it picks the configurations up asynchronously)."""
    def admitted_by_the_webhook() -> bool:
        """the API server calls the operator's webhook"""
        probe = kubectl_create(cluster, namespace, manifest('probe'), '--dry-run=server')
        return "Warning: Checked by the operator" in probe.stderr
    kubeobjects.poll(admitted_by_the_webhook, timeout=timeout, interval=0.5)


def get_ca_bundle(cluster: Cluster, name: str) -> bytes:
    config = json.loads(cluster.kubectl('get', 'validatingwebhookconfiguration', name, '-o', 'json').stdout)
    return base64.b64decode(config['webhooks'][0]['clientConfig']['caBundle'])


def get_presented_certificate(port: int, cadata: bytes) -> x509.Certificate:
    """The certificate that the server presents to a new connection (verified by the CA)."""
    context = ssl.create_default_context(cadata=cadata.decode('ascii'))
    with socket.create_connection(('127.0.0.1', port), timeout=10) as sock:
        with context.wrap_socket(sock, server_hostname='127.0.0.1') as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def review(namespace: str, **spec: Any) -> Object:
    return {
        'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
        'request': {
            'uid': '00000000-0000-0000-0000-000000000001',
            'kind': {'group': GROUP, 'version': 'v1', 'kind': KIND},
            'resource': {'group': GROUP, 'version': 'v1', 'resource': PLURAL},
            'name': 'direct', 'namespace': namespace, 'operation': 'CREATE', 'dryRun': True,
            'userInfo': {'username': 'attacker'},
            'object': manifest('direct', **spec), 'oldObject': None,
        },
    }


def post(port: int, data: bytes, context: ssl.SSLContext, *, timeout: float = 60) -> tuple[int, bytes]:
    request = urllib.request.Request(f'https://127.0.0.1:{port}/checking', data=data, method='POST',
                                     headers={'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def trusting(cadata: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=cadata.decode('ascii'))


def trickle_until_closed(sock: socket.socket, data: bytes = b'', *, interval: float = 0.2,
                         limit: float = 60) -> tuple[Optional[float], bytes]:
    """
    Send the data a byte per interval (then nothing), until the server closes the connection.

    Returns the seconds until the server closed it (``None`` if it did not within
    the limit), and what the server sent meanwhile.
    """
    sock.settimeout(interval)
    started = time.monotonic()
    received = b''
    sent = 0
    try:
        while time.monotonic() - started < limit:
            if sent < len(data):
                sock.sendall(data[sent:sent + 1])
                sent += 1
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return time.monotonic() - started, received
            received += chunk
    except OSError:  # incl. ssl.SSLError & ConnectionResetError: closed by the server
        return time.monotonic() - started, received
    finally:
        sock.close()
    return None, received


def connect(port: int, cadata: Optional[bytes] = None) -> socket.socket:
    """A TCP connection to the server, with a TLS handshake done if the CA is given."""
    sock = socket.create_connection(('127.0.0.1', port), timeout=10)
    return trusting(cadata).wrap_socket(sock, server_hostname='127.0.0.1') if cadata is not None else sock


SLOW_HEAD = b'POST /checking HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + b'a' * 10_000


def test_admission_round_trip_while_slow_clients_hold_connections(
        cluster: Cluster, namespace: str, managed: str, start_operator: Callable[..., OperatorProcess],
) -> None:
    port = free_port()
    operator = start_operator(PORT=str(port), ADMISSION_MANAGED=managed)
    cadata = get_ca_bundle(cluster, managed)  # the generated CA

    # Slow clients take connections; the API server's requests are still served meanwhile.
    with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
        slow = [pool.submit(trickle_until_closed, connect(port, cadata), SLOW_HEAD) for _ in range(20)]
        wait_until_admitted(cluster, namespace)
        result = kubectl_create(cluster, namespace, manifest('admitted', field='value'))
        dropped = [future.result() for future in slow]

    assert result.returncode == 0, result.stderr
    assert "Warning: Checked by the operator, peer=None." in result.stderr
    assert kubeobjects.get_object(cluster, namespace, RESOURCE, 'admitted')['spec'] == {'field': 'value'}
    assert all(elapsed is not None and elapsed < HEAD_TIMEOUT + MARGIN for elapsed, _ in dropped), dropped
    assert "Traceback" not in operator.log


def test_renewed_certificate_of_the_same_ca_is_used_while_the_api_server_calls_the_webhook(
        cluster: Cluster, namespace: str, managed: str, tmp_path: pathlib.Path,
        start_operator: Callable[..., OperatorProcess],
) -> None:
    ca = CertificateAuthority('Webhook CA')
    old_chain, old_pkey, old_cert = ca.issue('127.0.0.1')
    new_chain, new_pkey, new_cert = ca.issue('127.0.0.1')
    (tmp_path / 'cert.pem').write_bytes(old_chain)
    (tmp_path / 'pkey.pem').write_bytes(old_pkey)
    (tmp_path / 'ca.pem').write_bytes(ca.pem)
    port = free_port()
    operator = start_operator(PORT=str(port), ADMISSION_MANAGED=managed, FILE_CHECK_INTERVAL='1',
                              CERTFILE=str(tmp_path / 'cert.pem'), PKEYFILE=str(tmp_path / 'pkey.pem'),
                              CAFILE=str(tmp_path / 'ca.pem'))
    wait_until_admitted(cluster, namespace)
    assert get_presented_certificate(port, ca.pem) == old_cert
    assert get_ca_bundle(cluster, managed) == ca.pem

    # The API server keeps calling the webhook while the files are renewed.
    stop = threading.Event()
    failures: list[str] = []

    def keep_reviewing() -> None:
        while not stop.is_set():
            probe = kubectl_create(cluster, namespace, manifest('probe'), '--dry-run=server')
            if "Warning: Checked by the operator" not in probe.stderr:
                failures.append(probe.stderr)

    reviewer = threading.Thread(target=keep_reviewing)
    reviewer.start()
    try:
        time.sleep(1)
        replace_file(tmp_path / 'pkey.pem', new_pkey)
        replace_file(tmp_path / 'cert.pem', new_chain)

        def renewed() -> bool:
            """the server presents the new certificate"""
            return get_presented_certificate(port, ca.pem) == new_cert
        kubeobjects.poll(renewed, timeout=30)
        operator.wait_for(r"The webhook server's certificate files have changed: new connections use them\.")
        time.sleep(2)  # the API server's connections: some old, some new
    finally:
        stop.set()
        reviewer.join()

    result = kubectl_create(cluster, namespace, manifest('after-renewal', field='value'))
    assert result.returncode == 0, result.stderr
    assert "Warning: Checked by the operator, peer=None." in result.stderr
    assert failures == []  # no admission failed during the renewal
    assert get_ca_bundle(cluster, managed) == ca.pem  # the same CA: nothing to reconfigure
    assert "Traceback" not in operator.log


def test_renewed_ca_goes_to_the_webhook_configurations(
        cluster: Cluster, namespace: str, managed: str, tmp_path: pathlib.Path,
        start_operator: Callable[..., OperatorProcess],
) -> None:
    old_ca, new_ca = CertificateAuthority('Old webhook CA'), CertificateAuthority('New webhook CA')
    old_chain, old_pkey, _ = old_ca.issue('127.0.0.1')
    new_chain, new_pkey, new_cert = new_ca.issue('127.0.0.1')
    (tmp_path / 'cert.pem').write_bytes(old_chain)
    (tmp_path / 'pkey.pem').write_bytes(old_pkey)
    (tmp_path / 'ca.pem').write_bytes(old_ca.pem)
    port = free_port()
    start_operator(PORT=str(port), ADMISSION_MANAGED=managed, FILE_CHECK_INTERVAL='1',
                   CERTFILE=str(tmp_path / 'cert.pem'), PKEYFILE=str(tmp_path / 'pkey.pem'),
                   CAFILE=str(tmp_path / 'ca.pem'))
    wait_until_admitted(cluster, namespace)

    replace_file(tmp_path / 'ca.pem', new_ca.pem)
    replace_file(tmp_path / 'pkey.pem', new_pkey)
    replace_file(tmp_path / 'cert.pem', new_chain)

    def reconfigured() -> bool:
        """the managed configuration has the new CA bundle"""
        return get_ca_bundle(cluster, managed) == new_ca.pem
    kubeobjects.poll(reconfigured, timeout=30)
    assert get_presented_certificate(port, new_ca.pem) == new_cert
    wait_until_admitted(cluster, namespace)  # once the API server has the new CA bundle
    result = kubectl_create(cluster, namespace, manifest('after-rotation'))
    assert result.returncode == 0, result.stderr


@pytest.fixture
def attacked(start_operator: Callable[..., OperatorProcess], tmp_path: pathlib.Path) -> tuple[int, bytes, Any]:
    """A running operator's server with a certificate of the test's CA (not managed: no API server calls it)."""
    ca = CertificateAuthority('Webhook CA')
    chain, pkey, _ = ca.issue('127.0.0.1')
    (tmp_path / 'cert.pem').write_bytes(chain)
    (tmp_path / 'pkey.pem').write_bytes(pkey)
    (tmp_path / 'ca.pem').write_bytes(ca.pem)
    port = free_port()
    operator = start_operator(PORT=str(port), CERTFILE=str(tmp_path / 'cert.pem'),
                              PKEYFILE=str(tmp_path / 'pkey.pem'), CAFILE=str(tmp_path / 'ca.pem'),
                              BODY_TIMEOUT=str(BODY_TIMEOUT), LAG_FILE=str(tmp_path / 'lag.txt'))
    return port, ca.pem, operator


def test_silent_and_trickled_tls_handshakes_are_dropped(attacked: tuple[int, bytes, Any]) -> None:
    port, _, operator = attacked
    hello = bytes.fromhex('16030100c8010000c40303') + bytes(random.getrandbits(8) for _ in range(1000))
    silent, _ = trickle_until_closed(connect(port))
    trickled, _ = trickle_until_closed(connect(port), hello)
    assert silent is not None and HEAD_TIMEOUT * 0.8 <= silent < HEAD_TIMEOUT + MARGIN
    assert trickled is not None and HEAD_TIMEOUT * 0.8 <= trickled < HEAD_TIMEOUT + MARGIN
    assert "Traceback" not in operator.log


def test_trickled_heads_are_dropped(attacked: tuple[int, bytes, Any]) -> None:
    port, cadata, operator = attacked
    elapsed, received = trickle_until_closed(connect(port, cadata), SLOW_HEAD)
    assert elapsed is not None and HEAD_TIMEOUT * 0.8 <= elapsed < HEAD_TIMEOUT + MARGIN
    assert received == b''
    assert "Checked:" not in operator.log


def test_trickled_bodies_are_answered_408_and_dropped(attacked: tuple[int, bytes, Any]) -> None:
    port, cadata, operator = attacked
    sock = connect(port, cadata)
    sock.sendall(b'POST /checking HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n')
    elapsed, received = trickle_until_closed(sock, b'{"request": ' + b' ' * 10_000)
    assert received.startswith(b'HTTP/1.1 408 Request Timeout\r\n')
    assert elapsed is not None and BODY_TIMEOUT * 0.8 <= elapsed < BODY_TIMEOUT + LINGERING_TIME + MARGIN
    assert "Checked:" not in operator.log


@pytest.mark.parametrize('data', [
    pytest.param(b'[' * 100_000, id='lists'),
    pytest.param(b'{"request": ' + b'{"a": ' * 100_000, id='objects'),
])
def test_deeply_nested_reviews_are_bad_requests_without_tracebacks(
        attacked: tuple[int, bytes, Any], data: bytes) -> None:
    port, cadata, operator = attacked
    status, text = post(port, data, trusting(cadata))
    assert (status, text) == (400, b"The admission review is not a valid JSON: nested deeper than 1000 levels")
    status, _ = post(port, json.dumps(review('default', field='value')).encode(), trusting(cadata))
    assert status == 200  # and the server goes on
    assert "Traceback" not in operator.log
    assert operator.error_lines == []


def test_large_reviews_do_not_stall_the_operator(
        attacked: tuple[int, bytes, Any], namespace: str, tmp_path: pathlib.Path) -> None:
    port, cadata, operator = attacked
    # Almost the largest accepted review: a long series of numbers, slow for json.loads (0.1-0.3 s of CPU).
    rnd = random.Random(0)
    text = json.dumps(review(namespace, samples='SAMPLES'))
    room = MAX_REVIEW_SIZE - 1024 - len(text)
    numbers = ','.join(repr(rnd.random() + 0.1) for _ in range(room // 19))[:room].rsplit(',', 1)[0]
    data = text.replace('"SAMPLES"', f'[{numbers}]').encode()
    samples = len(json.loads(data)['request']['object']['spec']['samples'])
    assert MAX_REVIEW_SIZE - 2048 < len(data) < MAX_REVIEW_SIZE

    # The operator's own start-up (discovery, first listings: more of them in a cluster with many CRDs) is not measured.
    def settled() -> bool:
        """no lag in the last second"""
        return time.monotonic() - max(read_lags(tmp_path / 'lag.txt'), default=(0.0, 0.0))[0] > 1.0
    kubeobjects.poll(settled, timeout=30, interval=0.2)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(lambda _: post(port, data, trusting(cadata)), range(4)))
    finished = time.monotonic()
    operator.wait_for(rf"Checked: samples={samples}, peer=None\.", count=4)

    lags = [lag for moment, lag in read_lags(tmp_path / 'lag.txt') if started <= moment <= finished]
    assert [status for status, _ in replies] == [200] * 4
    # json.loads() of such a review on the loop holds it for 0.2 s of CPU here, each; sliced, parsed and freed,
    # the loop ticks within 0.03 s here, and within ~3 times that on a loaded VM (whole-suite runs).
    assert max(lags, default=0) < 0.1, f"The operator's event loop lagged by {max(lags):.3f}s of CPU."


def read_lags(path: pathlib.Path) -> list[tuple[float, float]]:
    """The operator's loop lags so far: (the monotonic moment, the CPU seconds between two ticks)."""
    text = path.read_text() if path.exists() else ''
    return [(float(moment), float(lag)) for moment, lag in (line.split() for line in text.splitlines())]


def test_clients_without_certificates_are_refused_when_a_client_ca_is_given(
        namespace: str, tmp_path: pathlib.Path, start_operator: Callable[..., OperatorProcess],
) -> None:
    server_ca, client_ca = CertificateAuthority('Webhook CA'), CertificateAuthority('Client CA')
    chain, pkey, _ = server_ca.issue('127.0.0.1')
    client_chain, client_pkey, _ = client_ca.issue('apiserver', client=True)
    (tmp_path / 'cert.pem').write_bytes(chain)
    (tmp_path / 'pkey.pem').write_bytes(pkey)
    (tmp_path / 'client-ca.pem').write_bytes(client_ca.pem)
    (tmp_path / 'client.pem').write_bytes(client_chain)
    (tmp_path / 'client-key.pem').write_bytes(client_pkey)
    port = free_port()
    operator = start_operator(PORT=str(port), CERTFILE=str(tmp_path / 'cert.pem'),
                              PKEYFILE=str(tmp_path / 'pkey.pem'), CLIENT_CA=str(tmp_path / 'client-ca.pem'))
    data = json.dumps(review(namespace, field='value')).encode()

    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
        post(port, data, trusting(server_ca.pem))
    identified = trusting(server_ca.pem)
    identified.load_cert_chain(tmp_path / 'client.pem', tmp_path / 'client-key.pem')
    status, reply = post(port, data, identified)

    assert status == 200
    assert json.loads(reply)['response']['warnings'] == ["Checked by the operator, peer=apiserver."]
    assert operator.log.count("Checked:") == 1  # the anonymous client never reached the handler
