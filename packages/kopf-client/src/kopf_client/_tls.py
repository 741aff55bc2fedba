"""
The SSL/TLS context of one set of credentials.

The context itself is the core's ``ConnectionInfo.as_ssl_context()`` (which
loads in-memory certificates through private temporary files).

Credentials without TLS verification (``insecure``) are said aloud, once: a
WARNING naming the server, either by the login function that has read them
(which also knows the kubeconfig's context and file) or, for those of the
operator's own login handlers, here when the TLS context is built for them.
"""
from __future__ import annotations

import logging
import ssl
import weakref
from typing import Any, Optional

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
    Build the context (see ``ConnectionInfo.as_ssl_context()``), saying aloud once if it is insecure.

    With a CA given (as a path or as data), only that CA is trusted, as ``kubectl``
    does; otherwise the system's default CAs are. Insecure credentials skip the
    verification, but still present the client certificate, if any.
    """
    context = info.as_ssl_context()  # refuses a non-boolean "insecure" before anything is said
    if info.insecure and _warned.get(id(info)) is not info:  # not yet by the login function that made them
        warn_if_insecure(info, source="insecure=True in the login handler's ConnectionInfo")
    return context
