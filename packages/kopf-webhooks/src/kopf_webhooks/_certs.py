"""
Self-signed certificates for development-mode webhook servers.

Kubernetes talks to webhooks only over HTTPS and verifies the server's
certificate against the ``caBundle`` of the webhook configuration. For local
development, there is usually no certificate issued for the developer's
machine, so the server generates one at startup: a single self-signed
certificate that serves both as the server's certificate and as its own CA
(which is what goes into ``caBundle`` and ``cadump``).

The cryptography library is heavy and needed only in development, so it is an
optional extra (``kopf-webhooks[dev]``); without it, the servers still run with
externally provided certificates or in the insecure (HTTP) mode.
"""
from __future__ import annotations

import datetime
import ipaddress
from typing import Collection, List, Optional, Tuple, Union

from kopf_webhooks import _errors

# The addresses that mean "all interfaces" are not addresses anyone can connect to.
_UNSPECIFIED_IPS = frozenset({ipaddress.ip_address('0.0.0.0'), ipaddress.ip_address('::')})

_VALIDITY = datetime.timedelta(days=365)
_CLOCK_SKEW = datetime.timedelta(hours=1)  # tolerate clients whose clocks lag behind


def build_certificate(
        hostnames: Collection[str],
        password: Optional[str] = None,
) -> Tuple[bytes, bytes]:
    """
    Build a self-signed certificate with the hostnames as its SANs.

    Returns the certificate and its private key, both PEM-encoded; the key is
    encrypted if a password is given. IP addresses become IP SANs (normalised),
    other names become DNS SANs; the first non-IP name becomes the common name
    (the first IP if there are no names); the unspecified addresses (``0.0.0.0``
    and ``::``) are skipped, as no client can connect to them.
    """
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
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

    # Elliptic curves: fast to generate at every startup, and accepted by Kubernetes.
    pkey = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    sans: List[x509.GeneralName] = [x509.DNSName(name) for name in names]
    sans.extend(x509.IPAddress(ip) for ip in ips)
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(pkey.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        # It is its own CA: strict clients require a CA to be marked as such.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=False, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False,
        ), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(pkey.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(pkey.public_key()), critical=False)
        .sign(pkey, hashes.SHA256())
    )

    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode('utf-8')) if password else
        serialization.NoEncryption()
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    pkey_pem = pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return cert_pem, pkey_pem


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
