"""
The control plane's credentials as written to disk, and the servers' flags that use them.

Real keys and certificates (``cryptography``) in tmp_path; no server runs here:
that etcd really refuses other clients, and the API server really works with
these files, is shown by ``integration/test_controlplane.py``.
"""
import pathlib
import re
import stat

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kopf_testing.controlplane import Ports
from kopf_testing.controlplane._commands import Layout, make_apiserver_argv, make_etcd_argv
from kopf_testing.controlplane._credentials import write_credentials

_PEM_PRIVATE_KEY = re.compile(rb'-----BEGIN [A-Z ]*PRIVATE KEY-----.+?-----END [A-Z ]*PRIVATE KEY-----', re.DOTALL)
PORTS = Ports(etcd_client=2379, etcd_peer=2380, apiserver=6443, controller_manager=10257)


@pytest.fixture
def layout(tmp_path: pathlib.Path) -> Layout:
    layout = Layout(tmp_path)
    layout.pki.mkdir()
    write_credentials(layout, admin_token='admin-token', user_token='user-token')
    return layout


def _cert(layout: Layout, name: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(layout.pem(name).read_bytes())


def _private_keys(path: pathlib.Path) -> list[ec.EllipticCurvePrivateKey]:
    keys = []
    for block in _PEM_PRIVATE_KEY.findall(path.read_bytes()):
        key = serialization.load_pem_private_key(block, password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        keys.append(key)
    return keys


def test_every_credential_file_is_0600(layout: Layout) -> None:
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in layout.pki.iterdir()}
    assert set(modes.values()) == {0o600}
    assert sorted(modes) == [
        'admin-key.pem', 'admin.pem', 'apiserver-etcd-client-key.pem', 'apiserver-etcd-client.pem',
        'apiserver-key.pem', 'apiserver.pem', 'ca.pem', 'etcd-ca.pem', 'etcd-key.pem', 'etcd.pem',
        'sa-key.pem', 'sa.pem', 'tokens.csv',
    ]


@pytest.mark.parametrize('ca_name', ['ca', 'etcd-ca'])
def test_no_file_holds_a_private_key_of_a_certificate_authority(layout: Layout, ca_name: str) -> None:
    ca_public_key = _cert(layout, ca_name).public_key()
    keys = [key for path in layout.pki.iterdir() for key in _private_keys(path)]
    assert len(keys) == 5  # the API server's, the admin's, etcd's, the API server's for etcd, the service accounts'
    assert [key for key in keys if key.public_key() == ca_public_key] == []


@pytest.mark.parametrize('name, issuer', [
    pytest.param('apiserver', 'ca', id='apiserver'),
    pytest.param('admin', 'ca', id='admin'),
    pytest.param('etcd', 'etcd-ca', id='etcd'),
    pytest.param('apiserver-etcd-client', 'etcd-ca', id='apiserver-etcd-client'),
])
def test_each_certificate_is_signed_by_its_own_authority_only(layout: Layout, name: str, issuer: str) -> None:
    other = {'ca': 'etcd-ca', 'etcd-ca': 'ca'}[issuer]
    _cert(layout, name).verify_directly_issued_by(_cert(layout, issuer))
    with pytest.raises((ValueError, InvalidSignature)):
        _cert(layout, name).verify_directly_issued_by(_cert(layout, other))


def test_etcd_certificate_serves_the_loopback_and_is_a_client_certificate_too(layout: Layout) -> None:
    # etcd's gRPC gateway connects to etcd's own client port with it.
    cert = _cert(layout, 'etcd')
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(usages) == {x509.oid.ExtendedKeyUsageOID.SERVER_AUTH, x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH}
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ['127.0.0.1']


def test_etcd_listens_with_tls_and_client_certificates_only(layout: Layout) -> None:
    argv = make_etcd_argv(pathlib.Path('/bin'), layout, PORTS)
    assert [arg for arg in argv if 'http://' in arg] == []
    assert {
        '--listen-client-urls=https://127.0.0.1:2379',
        '--listen-peer-urls=https://127.0.0.1:2380',
        '--client-cert-auth=true',
        '--peer-client-cert-auth=true',
        f'--trusted-ca-file={layout.pem("etcd-ca")}',
        f'--peer-trusted-ca-file={layout.pem("etcd-ca")}',
    } <= set(argv)


def test_apiserver_connects_to_etcd_with_its_client_certificate(layout: Layout) -> None:
    argv = make_apiserver_argv(pathlib.Path('/bin'), layout, PORTS)
    assert {
        '--etcd-servers=https://127.0.0.1:2379',
        f'--etcd-cafile={layout.pem("etcd-ca")}',
        f'--etcd-certfile={layout.pem("apiserver-etcd-client")}',
        f'--etcd-keyfile={layout.pem("apiserver-etcd-client-key")}',
    } <= set(argv)


def test_tokens_file_names_the_admin_in_system_masters_and_the_user_without_groups(layout: Layout) -> None:
    assert layout.tokens.read_text() == 'admin-token,admin,admin,"system:masters"\nuser-token,user,user\n'

