"""
Self-signed certificates: what they certify and how their keys are protected.

The certificates are parsed back with the cryptography library, which is the
same library that generates them; what matters here is their content.
"""
from __future__ import annotations

import ipaddress
import sys
from typing import List

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from kopf_webhooks import MissingDependencyError, build_certificate
from kopf_webhooks._certs import get_ca


def get_common_name(cert_pem: bytes) -> str:
    cert = x509.load_pem_x509_certificate(cert_pem)
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def get_sans(cert_pem: bytes) -> List[str]:
    cert = x509.load_pem_x509_certificate(cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(name.value) for name in sans]


def test_dns_names_and_ips_become_sans() -> None:
    cert, _ = build_certificate(['example.com', '127.0.0.1', '::1', 'localhost'])
    assert get_sans(cert) == ['example.com', 'localhost', '127.0.0.1', '::1']


def test_ips_are_sans_of_the_ip_type() -> None:
    cert, _ = build_certificate(['127.0.0.1'])
    sans = x509.load_pem_x509_certificate(cert).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert sans.value.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address('127.0.0.1')]


def test_ips_are_normalised() -> None:
    cert, _ = build_certificate(['0:0:0:0:0:0:0:1', '[::2]'])
    assert get_sans(cert) == ['::1', '::2']


@pytest.mark.parametrize('unspecified', [
    pytest.param('0.0.0.0', id='ipv4'),
    pytest.param('::', id='ipv6'),
])
def test_unspecified_ips_are_excluded(unspecified: str) -> None:
    cert, _ = build_certificate([unspecified, 'localhost'])
    assert get_sans(cert) == ['localhost']


def test_duplicates_are_excluded() -> None:
    cert, _ = build_certificate(['localhost', '127.0.0.1', 'localhost', '127.0.0.1'])
    assert get_sans(cert) == ['localhost', '127.0.0.1']


def test_first_dns_name_is_the_common_name() -> None:
    cert, _ = build_certificate(['127.0.0.1', 'first.example.com', 'second.example.com'])
    assert get_common_name(cert) == 'first.example.com'


def test_first_ip_is_the_common_name_if_there_are_no_dns_names() -> None:
    cert, _ = build_certificate(['0.0.0.0', '10.0.0.1', '10.0.0.2'])
    assert get_common_name(cert) == '10.0.0.1'


def test_chain_is_the_server_certificate_then_its_ca() -> None:
    chain_pem, _ = build_certificate(['localhost'])
    cert, ca = x509.load_pem_x509_certificates(chain_pem)
    assert cert.issuer == ca.subject
    assert ca.issuer == ca.subject
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert get_ca(chain_pem) == ca.public_bytes(serialization.Encoding.PEM)


def test_each_build_has_its_own_ca() -> None:
    first, _ = build_certificate(['localhost'])
    second, _ = build_certificate(['localhost'])
    assert get_ca(first) != get_ca(second)


def test_ca_bundle_verifies_the_certificate_for_its_hosts_and_ips() -> None:
    chain_pem, _ = build_certificate(['example.host', '10.1.2.3'])
    cert, ca = x509.load_pem_x509_certificates(chain_pem)
    cert.verify_directly_issued_by(ca)  # raises if the signature is not the CA's
    store = x509.verification.Store([x509.load_pem_x509_certificate(get_ca(chain_pem))])
    names: List[x509.DNSName | x509.IPAddress] = [
        x509.DNSName('example.host'), x509.IPAddress(ipaddress.ip_address('10.1.2.3'))]
    for name in names:
        verifier = x509.verification.PolicyBuilder().store(store).build_server_verifier(name)
        chain = verifier.verify(cert, [])  # raises if the chain or the name does not verify
        assert chain == [cert, ca]


def test_private_key_is_not_encrypted_without_a_password() -> None:
    chain_pem, pkey = build_certificate(['localhost'])
    assert pkey.startswith(b'-----BEGIN PRIVATE KEY-----')  # not "ENCRYPTED PRIVATE KEY"
    key = serialization.load_pem_private_key(pkey, password=None)  # raises if a password is needed
    cert = x509.load_pem_x509_certificate(chain_pem)
    assert key.public_key() == cert.public_key()  # the key of the certificate


def test_private_key_is_encrypted_with_the_password() -> None:
    _, pkey = build_certificate(['localhost'], password='secret')
    with pytest.raises(TypeError):  # "password was not given but private key is encrypted"
        serialization.load_pem_private_key(pkey, password=None)
    serialization.load_pem_private_key(pkey, password=b'secret')


@pytest.mark.parametrize('hostnames', [
    pytest.param([], id='empty'),
    pytest.param(['0.0.0.0', '::'], id='unspecified'),
])
def test_no_usable_hostnames_are_rejected(hostnames: List[str]) -> None:
    with pytest.raises(ValueError, match=r"No usable hostnames"):
        build_certificate(hostnames)


def test_missing_cryptography_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'cryptography', None)  # makes it unimportable
    with pytest.raises(MissingDependencyError, match=r"pip install kopf-webhooks\[dev\]"):
        build_certificate(['localhost'])


def test_missing_dependencies_are_import_errors() -> None:
    assert issubclass(MissingDependencyError, ImportError)
