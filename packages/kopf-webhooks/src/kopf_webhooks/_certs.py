"""
Generated certificates for development-mode webhook servers.

Kubernetes talks to webhooks only over HTTPS and verifies the server's
certificate against the ``caBundle`` of the webhook configuration. For local
development, there is usually no certificate issued for the developer's
machine, so the server generates a throwaway CA at startup and a server
certificate signed by it: the CA goes into ``caBundle`` (and ``cadump``),
the server presents the chain (its certificate, then the CA's).
A separate CA (rather than one self-signed certificate that is its own CA)
is what strict TLS clients require: a CA certificate must not be a server's.

The cryptography library is heavy and needed only in development, so it is an
optional extra (``kopf-webhooks[dev]``); without it, the servers still run with
externally provided certificates or in the insecure (HTTP) mode. (Kopf used
certbuilder/oscrypto for this, which fail to detect OpenSSL 3.)
"""
from __future__ import annotations

import datetime
import ipaddress
from typing import TYPE_CHECKING, Any, Collection, List, Optional, Tuple, Union

from kopf_webhooks import _errors

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

# The addresses that mean "all interfaces" are not addresses anyone can connect to.
_UNSPECIFIED_IPS = frozenset({ipaddress.ip_address('0.0.0.0'), ipaddress.ip_address('::')})

_VALIDITY = datetime.timedelta(days=365)
_CLOCK_SKEW = datetime.timedelta(hours=1)  # tolerate clients whose clocks lag behind


def build_certificate(
        hostnames: Collection[str],
        password: Optional[str] = None,
) -> Tuple[bytes, bytes]:
    """
    Build a server certificate for the hostnames as SANs, signed by a new CA.

    Returns the certificate chain (the server's certificate, then the CA's) and
    the server's private key, all PEM-encoded; the key is encrypted if a
    password is given. The last certificate of the chain is the CA for the
    clients. IP addresses become IP SANs (normalised), other names become DNS
    SANs; the first non-IP name becomes the common name (the first IP if there
    are no names); the unspecified addresses (``0.0.0.0`` and ``::``) are
    skipped, as no client can connect to them.
    """
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
    except ImportError as e:
        raise _errors.MissingDependencyError(
            "Self-signed certificates need the 'cryptography' library. "
            "Install it with: pip install kopf-webhooks[dev]. "
            "Alternatively, provide certfile= & pkeyfile=, or use insecure=True."
        ) from e

    names, ips = _split_hostnames(hostnames)
    if not names and not ips:
        raise ValueError(f"No usable hostnames for a certificate among {list(hostnames)!r}.")
    common_name = names[0] if names else str(ips[0])
    sans: List[x509.GeneralName] = [x509.DNSName(name) for name in names]
    sans.extend(x509.IPAddress(ip) for ip in ips)

    # Elliptic curves: fast to generate at every startup, and accepted by Kubernetes.
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _build_ca(ca_key, f'Kopf webhooks CA for {common_name}')
    pkey = ec.generate_private_key(ec.SECP256R1())
    cert = _build_server_cert(pkey, ca_key, ca_cert, common_name, sans)

    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode('utf-8')) if password else
        serialization.NoEncryption()
    )
    chain_pem = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM)
    pkey_pem = pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return chain_pem, pkey_pem


def _build_ca(key: ec.EllipticCurvePrivateKey, common_name: str) -> x509.Certificate:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    return _sign(
        _base_builder(subject, subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False),
        key)


def _build_server_cert(
        key: ec.EllipticCurvePrivateKey,
        ca_key: ec.EllipticCurvePrivateKey,
        ca_cert: x509.Certificate,
        common_name: str,
        sans: List[x509.GeneralName],
) -> x509.Certificate:
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    return _sign(
        _base_builder(subject, ca_cert.subject, key.public_key())
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False),
        ca_key)


def _base_builder(subject: x509.Name, issuer: x509.Name, public_key: Any) -> x509.CertificateBuilder:
    from cryptography import x509

    now = datetime.datetime.now(datetime.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=True, key_cert_sign=ca, crl_sign=ca, content_commitment=False,
        key_encipherment=False, data_encipherment=False, key_agreement=False,
        encipher_only=False, decipher_only=False,
    )


def _sign(builder: x509.CertificateBuilder, key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    from cryptography.hazmat.primitives import hashes

    return builder.sign(key, hashes.SHA256())


def get_ca(chain: bytes) -> bytes:
    """The last certificate of a PEM chain: the CA to trust (the only one in a self-signed chain)."""
    marker = b'-----BEGIN CERTIFICATE-----'
    index = chain.rfind(marker)
    return chain[index:] if index >= 0 else chain


def _split_hostnames(
        hostnames: Collection[str],
) -> Tuple[List[str], List[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]]:
    """Separate DNS names from IPs, normalise the IPs, drop duplicates & unusable ones."""
    names: List[str] = []
    ips: List[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]] = []
    for hostname in hostnames:
        try:
            ip = ipaddress.ip_address(hostname.strip('[]'))  # IPv6 can come in URL brackets
        except ValueError:
            if hostname and hostname not in names:
                names.append(hostname)
        else:
            if ip not in _UNSPECIFIED_IPS and ip not in ips:
                ips.append(ip)
    return names, ips
