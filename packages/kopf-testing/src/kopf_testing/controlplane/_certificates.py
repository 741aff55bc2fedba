"""
The keys and certificates of a throwaway cluster, generated afresh per cluster.

One certificate authority signs both the API server's serving certificate and
the client certificates: the API server trusts it via ``--client-ca-file``, and
clients trust it as the cluster's CA. A second one, etcd's, signs etcd's
certificate and the API server's client certificate for etcd, and nothing else:
etcd trusts only it, so no other certificate of the cluster (e.g. the admin's)
opens etcd. ECDSA P-256 keys are used throughout because generating them takes
microseconds where RSA takes tens of milliseconds; every Kubernetes component
accepts them, including for service-account tokens.

An authority's private key never leaves the object: nothing in the cluster
signs anything after the start (the controller manager runs no CSR signer), so
the key lives only as long as the ``Authority`` and is never written to disk.
"""
import dataclasses
import datetime
import ipaddress
import pathlib
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from . import _files

_VALIDITY = datetime.timedelta(days=365)


@dataclasses.dataclass(frozen=True)
class CertifiedKey:
    """A certificate and its private key, both PEM-encoded."""
    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: pathlib.Path, key_path: pathlib.Path) -> None:
        _files.write_private_file(cert_path, self.cert_pem)
        _files.write_private_file(key_path, self.key_pem)


class Authority:
    """A self-signed CA that issues server and client certificates; its key is not exposed, only used."""

    def __init__(self, common_name: str = 'kopf-controlplane-ca') -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))  # tolerate small clock skews
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False,
            ), critical=True)
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issue_server(self, common_name: str, *, hosts: Sequence[str], client: bool = False) -> CertifiedKey:
        """
        A serving certificate for the given DNS names and IP addresses (as SANs).

        With ``client=True``, it is a client certificate too: etcd connects to
        its own client port with it (its gRPC gateway), and to its peers.
        """
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        usages = [ExtendedKeyUsageOID.SERVER_AUTH, *([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])]
        return self._issue(common_name, (), usages, sans)

    def issue_client(self, user: str, *, groups: Sequence[str] = ()) -> CertifiedKey:
        """A client certificate: Kubernetes reads the user from CN and the groups from O."""
        return self._issue(user, groups, [ExtendedKeyUsageOID.CLIENT_AUTH], [])

    def _issue(
            self,
            common_name: str,
            organizations: Sequence[str],
            usages: Sequence[x509.ObjectIdentifier],
            sans: list[x509.GeneralName],
    ) -> CertifiedKey:
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return CertifiedKey(cert.public_bytes(serialization.Encoding.PEM), _private_pem(key))


def generate_signing_key() -> CertifiedKey:
    """
    The service-account token signing key pair.

    It is not a certificate: ``cert_pem`` holds the public key, which is what
    ``--service-account-key-file`` needs to verify the tokens.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo,
    )
    return CertifiedKey(public_pem, _private_pem(key))


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption(),
    )
