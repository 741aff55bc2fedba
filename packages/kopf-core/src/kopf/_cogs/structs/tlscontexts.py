"""
The TLS context and the HTTP authorization of one set of credentials (stdlib only).

Python's :mod:`ssl` loads client certificates only from files, while login
handlers often have them only in memory (e.g. ``client-certificate-data`` of
a kubeconfig, or the output of an exec plugin). Such data is written to files
in a private temporary directory (readable only by the current user), loaded,
and removed at once: the context keeps the loaded keys in memory, so the
secrets stay on disk only for the duration of the loading.

These are :class:`ConnectionInfo`'s ``as_ssl_context()`` and ``as_http_headers()``,
for the API clients (kopf-client's, or one's own with a vendored core).
"""
from __future__ import annotations

import base64
import contextlib
import os
import shutil
import ssl
import tempfile
from typing import TYPE_CHECKING, Dict, Iterator, Optional, Union

if TYPE_CHECKING:
    from kopf._cogs.structs.credentials import ConnectionInfo


def make_ssl_context(info: ConnectionInfo) -> ssl.SSLContext:
    """
    Build the context: trusted CAs, verification, and the client certificate.

    With a CA given (as a path or as data), only that CA is trusted, as
    ``kubectl`` does; otherwise the system's default CAs are. Insecure
    credentials skip both the verification and the hostname check, but still
    present the client certificate, if any.
    """
    if info.insecure is not None and not isinstance(info.insecure, bool):
        # E.g. "false" read from a file as it is: truthy, so it would silently mean "insecure".
        raise ValueError(f"ConnectionInfo.insecure must be True, False, or None, not {info.insecure!r}.")
    context = ssl.create_default_context(purpose=ssl.Purpose.SERVER_AUTH,
                                         cafile=info.ca_path, cadata=_as_cadata(info.ca_data))
    if info.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if info.certificate_path or info.certificate_data:
        with _materialized(info) as (certfile, keyfile):
            context.load_cert_chain(certfile=certfile, keyfile=keyfile)
    return context


def make_authorization(info: ConnectionInfo) -> Dict[str, str]:
    """The ``Authorization`` header of these credentials: the token (Bearer by default), or the basic auth."""
    if info.token:
        return {'Authorization': f'{info.scheme or "Bearer"} {info.token}'}
    if info.username is not None:
        pair = base64.b64encode(f'{info.username}:{info.password or ""}'.encode()).decode('ascii')
        return {'Authorization': f'Basic {pair}'}
    return {}


def _as_cadata(data: Optional[bytes]) -> Union[str, bytes, None]:
    """The CA data as :meth:`ssl.SSLContext.load_verify_locations` wants it: PEM as text, DER as bytes."""
    if not data:
        return None
    if data.lstrip().startswith(b'-----'):
        return data.decode('ascii')
    return data


@contextlib.contextmanager
def _materialized(info: ConnectionInfo) -> Iterator[tuple[str, Optional[str]]]:
    """The certificate's and the key's file paths, writing the in-memory data to private files."""
    directory: Optional[str] = None
    try:
        certfile = info.certificate_path
        keyfile = info.private_key_path
        if info.certificate_data or info.private_key_data:
            directory = tempfile.mkdtemp(prefix='kopf-tls-')  # mode 0700
        if info.certificate_data and directory is not None:
            certfile = _write_private(directory, 'client.crt', info.certificate_data)
        if info.private_key_data and directory is not None:
            keyfile = _write_private(directory, 'client.key', info.private_key_data)
        if certfile is None:  # only a key was given, which is useless without a certificate
            raise ValueError("A client private key is given without a client certificate.")
        yield certfile, keyfile
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def _write_private(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, 'wb') as f:
        f.write(data)
    return path
