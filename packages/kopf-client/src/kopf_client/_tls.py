"""
The SSL/TLS context of one set of credentials.

Python's :mod:`ssl` loads client certificates only from files, while login
handlers often have them only in memory (e.g. ``client-certificate-data`` of
a kubeconfig, or the output of an exec plugin). Such data is written to files
in a private temporary directory (readable only by the current user), loaded,
and removed at once: the context keeps the loaded keys in memory, so the
secrets stay on disk only for the duration of the loading.

Credentials without TLS verification (``insecure``) are said aloud, once: a
WARNING naming the server, either by the login function that has read them
(which also knows the kubeconfig's context and file) or, for those of the
operator's own login handlers, here when the TLS context is built for them.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import ssl
import tempfile
import weakref
from typing import Any, Iterator, Optional, Union

from kopf import clients

logger = logging.getLogger(__name__)

# The credentials already warned about as insecure, by identity (not by equality: the same values
# from another login are warned about again). Weak: the credentials are dropped when no longer used.
_warned: weakref.WeakValueDictionary[int, clients.ConnectionInfo] = weakref.WeakValueDictionary()


def warn_if_insecure(info: clients.ConnectionInfo, *, logger: Any = logger, source: Optional[str] = None) -> None:
    """
    Say that TLS verification is off for these credentials (if it is), naming the server and the source.

    The login functions call it once per login, with the kubeconfig's context and file as the source;
    :func:`make_ssl_context` then stays silent for those credentials.
    """
    if info.insecure:
        where = f' ({source})' if source else ''
        logger.warning(f"TLS verification is off for {info.server}{where}: the server's certificate is not "
                       f"checked, so the credentials go to whoever answers at this address. Give the server's CA "
                       f"instead (certificate-authority in a kubeconfig, ca_path or ca_data in a ConnectionInfo).")
        _warned[id(info)] = info


def make_ssl_context(info: clients.ConnectionInfo) -> ssl.SSLContext:
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
    context = ssl.create_default_context(
        purpose=ssl.Purpose.SERVER_AUTH,
        cafile=info.ca_path,
        cadata=_as_cadata(info.ca_data),
    )
    if info.insecure:
        if _warned.get(id(info)) is not info:  # not yet by the login function that made them
            warn_if_insecure(info, source="insecure=True in the login handler's ConnectionInfo")
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if info.certificate_path or info.certificate_data:
        with _materialized(info) as (certfile, keyfile):
            context.load_cert_chain(certfile=certfile, keyfile=keyfile)
    return context


def _as_cadata(data: Optional[bytes]) -> Union[str, bytes, None]:
    """The CA data as :meth:`ssl.SSLContext.load_verify_locations` wants it: PEM as text, DER as bytes."""
    if not data:
        return None
    if data.lstrip().startswith(b'-----'):
        return data.decode('ascii')
    return data


@contextlib.contextmanager
def _materialized(info: clients.ConnectionInfo) -> Iterator[tuple[str, Optional[str]]]:
    """The certificate's and the key's file paths, writing the in-memory data to private files."""
    directory: Optional[str] = None
    try:
        certfile = info.certificate_path
        keyfile = info.private_key_path
        if info.certificate_data or info.private_key_data:
            directory = tempfile.mkdtemp(prefix='kopf-client-')  # mode 0700
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
