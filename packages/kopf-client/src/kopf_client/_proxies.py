"""
Proxies to the API server: ``ConnectionInfo.proxy_url`` and the kubeconfig's ``proxy-url``.

The schemes are those that ``kubectl`` accepts: ``http://`` and ``https://``
(aiohttp sends the requests through them, tunnelling TLS with ``CONNECT``),
and ``socks5://``, which aiohttp cannot do by itself: it needs the optional
``aiohttp-socks`` package, and without it, the credentials are refused with
one message that says so, instead of connecting directly behind the user's back.

Precedence: an explicit proxy URL wins over the proxy variables (``HTTPS_PROXY``,
``NO_PROXY``, ...) that ``trust_env`` enables, as in ``kubectl``, where the
kubeconfig's ``proxy-url`` wins over the environment.
"""
from __future__ import annotations

import dataclasses
import importlib
import ssl
import urllib.parse
from typing import Any, Optional, Tuple

import aiohttp

HTTP_SCHEMES = ('http', 'https')
SOCKS_SCHEMES = ('socks5',)
SOCKS_PACKAGE = 'aiohttp-socks'
SOCKS_MODULE = 'aiohttp_socks'


class ProxyError(ValueError):
    """A proxy URL that cannot be used here (an unsupported scheme, or SOCKS without its package)."""


def check_proxy_url(url: str, *, source: str = 'proxy_url') -> str:
    """The URL as it is, if it can be used; :class:`ProxyError` with what to do otherwise."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in HTTP_SCHEMES + SOCKS_SCHEMES or not parts.hostname:
        raise ProxyError(f"The {source} {_shown(url)} is not a proxy URL that can be used: "
                         f"use http://, https:// or socks5:// with a host (as kubectl accepts).")
    if scheme in SOCKS_SCHEMES and _socks_module() is None:
        raise ProxyError(f"The {source} {_shown(url)} is a SOCKS proxy, which needs the {SOCKS_PACKAGE!r} "
                         f"package: pip install {SOCKS_PACKAGE}")
    return url


def make_connector(
        proxy_url: Optional[str],
        *,
        ssl_context: ssl.SSLContext,
) -> Tuple[aiohttp.BaseConnector, Optional[str]]:
    """
    The connector of a session, and the proxy to give to its requests (``None``: none, or the connector's own).

    A SOCKS proxy is the connector's (it opens the connections through the proxy);
    an HTTP(S) proxy is aiohttp's own, given with every request.
    """
    if proxy_url is None:
        return aiohttp.TCPConnector(limit=0, ssl=ssl_context), None
    check_proxy_url(proxy_url)
    if urllib.parse.urlsplit(proxy_url).scheme.lower() in SOCKS_SCHEMES:
        socks: Any = _socks_module()
        connector: aiohttp.BaseConnector = socks.ProxyConnector.from_url(proxy_url, limit=0, ssl=ssl_context)
        return connector, None
    return aiohttp.TCPConnector(limit=0, ssl=ssl_context), proxy_url


def _socks_module() -> Optional[Any]:
    try:
        return importlib.import_module(SOCKS_MODULE)
    except ImportError:
        return None


def _shown(url: str) -> str:
    """The URL for the messages, without the password, if any."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return repr(url)
    host = parts.netloc.rsplit('@', 1)[1]
    return repr(urllib.parse.urlunsplit(parts._replace(netloc=f'{parts.username or ""}:<hidden>@{host}')))


def trusting_env(info: Optional[Any], settings: Optional[Any]) -> Optional[Any]:
    """
    The credentials with ``trust_env`` of ``settings.networking`` (as Kopf's login functions give it).

    The client's own sessions follow the settings anyway; the credentials carry the
    flag for the other consumers of the vault (e.g. one's own sessions built from them).
    """
    if info is None or settings is None or not settings.networking.trust_env or info.trust_env:
        return info
    return dataclasses.replace(info, trust_env=True)
