"""
HTTP sessions, one per credentials, with their connection pools.

The credentials define the connection itself (the server, the CA, the
client certificate), not only the headers; so each credentials item gets its
own :class:`aiohttp.ClientSession` with its own connector, kept for as long
as the credentials are in use: connections are reused across requests.

When credentials are replaced (the same vault key with new values after a
re-login) or invalidated (after a 401), their session is retired: it gets no
new requests, and is closed once the requests in flight (e.g. long watch
streams) are over — those are not broken just because another request saw
a 401 with the same token; they will see it themselves on their next attempt.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import importlib.metadata
from typing import AsyncIterator, Callable, Dict, Mapping, Optional, Set

import aiohttp

from kopf import clients
from kopf_client import _tls

# The class of the HTTP sessions to the API (``kopf.AiohttpSession``, e.g. for type annotations).
AiohttpSession = aiohttp.ClientSession


def _user_agent() -> str:
    try:
        version = importlib.metadata.version('kopf-client')
    except importlib.metadata.PackageNotFoundError:  # e.g. when vendored as sources
        version = 'unknown'
    return f'kopf-client/{version}'


def make_session(
        info: clients.ConnectionInfo,
        *,
        headers: Optional[Mapping[str, str]] = None,
        trust_env: bool = False,
) -> aiohttp.ClientSession:
    """
    A session that authenticates every request with these credentials.

    A token wins over a username/password pair: both go into the same
    ``Authorization`` header, and only one can be sent. The connection pool is
    unlimited: watch streams hold their connections for minutes, and a limit
    would make the regular requests wait behind them. With ``trust_env`` (of
    the settings or the credentials), the proxy variables and ``~/.netrc`` apply.
    """
    ssl_context = _tls.make_ssl_context(info)  # first: if it fails, no secrets are in this frame's locals
    all_headers: Dict[str, str] = {'User-Agent': _user_agent(), **(headers or {}), **_authorization(info)}
    connector = aiohttp.TCPConnector(limit=0, ssl=ssl_context)
    return aiohttp.ClientSession(connector=connector, headers=all_headers,
                                 trust_env=trust_env or info.trust_env)


class HiddenStr(str):
    """
    A header value that is sent as it is, but is never shown by ``repr()``.

    aiohttp keeps the request's headers in its errors (e.g. the ``request_info``
    of :class:`aiohttp.ClientResponseError`, whose repr shows them) and in the
    locals of its frames, which error trackers and ``pytest --showlocals`` print.
    """
    __slots__ = ()

    def __repr__(self) -> str:
        return '<hidden>'


def _authorization(info: clients.ConnectionInfo) -> Dict[str, str]:
    """The ``Authorization`` header of these credentials, if any."""
    if info.token:
        return {'Authorization': HiddenStr(f'{info.scheme or "Bearer"} {info.token}')}
    if info.username is not None:
        # Encoded here rather than with aiohttp.BasicAuth: it is deprecated in newer aiohttp versions.
        pair = base64.b64encode(f'{info.username}:{info.password or ""}'.encode()).decode('ascii')
        return {'Authorization': HiddenStr(f'Basic {pair}')}
    return {}


# How long to let the closed TLS connections shut down (aiohttp's own advice for graceful exits).
TLS_CLOSING_GRACE = 0.25


@dataclasses.dataclass(eq=False)
class Lease:
    """A session in use by one request or stream: counted, so that a retired session is closed when unused."""
    info: clients.ConnectionInfo
    session: aiohttp.ClientSession
    users: int = 0


class SessionPool:
    """The sessions of all credentials in use, by their vault keys."""

    def __init__(
            self,
            *,
            headers: Optional[Mapping[str, str]] = None,
            trust_env: Callable[[], bool] = lambda: False,
    ) -> None:
        self._headers = dict(headers or {})
        self._trust_env = trust_env  # read per new session: the settings change at startup
        self._current: Dict[clients.VaultKey, Lease] = {}
        self._retired: Set[Lease] = set()  # still in use by requests in flight
        self._closed = False

    def __len__(self) -> int:
        """The number of sessions open (current and retired but still in use)."""
        return len(self._current) + len(self._retired)

    @contextlib.asynccontextmanager
    async def session(
            self,
            key: clients.VaultKey,
            info: clients.ConnectionInfo,
    ) -> AsyncIterator[aiohttp.ClientSession]:
        """Use the session of these credentials for one request (or one stream)."""
        lease = await self.lease(key, info)
        try:
            yield lease.session
        finally:
            await self.give_back(lease)

    async def give_back(self, lease: Lease) -> None:
        """The request or stream is over: close the session if it is retired and unused now."""
        lease.users -= 1
        if lease in self._retired and lease.users <= 0:
            self._retired.discard(lease)
            await lease.session.close()

    async def retire(self, key: clients.VaultKey, info: clients.ConnectionInfo) -> None:
        """Stop using the session of these (invalid) credentials; close it when unused."""
        lease = self._current.get(key)
        if lease is not None and lease.info == info:
            await self._retire(key)

    async def close(self) -> None:
        """Close all sessions, including those in use: the client is being closed."""
        self._closed = True
        leases = [*self._current.values(), *self._retired]
        self._current.clear()
        self._retired.clear()
        for lease in leases:
            await lease.session.close()
        if leases:
            # TLS transports finish closing in the next iterations of the loop; without this
            # pause, a loop closed right after the client leaves them unclosed (ResourceWarning).
            await asyncio.sleep(TLS_CLOSING_GRACE)

    async def lease(self, key: clients.VaultKey, info: clients.ConnectionInfo) -> Lease:
        """The session of these credentials, counted as in use until given back."""
        if self._closed:
            raise RuntimeError("The API client is closed and cannot make requests anymore.")
        lease = self._current.get(key)
        if lease is not None and lease.info != info:  # re-populated with new credentials
            await self._retire(key)
            lease = None
        if lease is None:
            lease = Lease(info=info, session=make_session(info, headers=self._headers,
                                                          trust_env=self._trust_env()))
            self._current[key] = lease
        lease.users += 1
        return lease

    async def _retire(self, key: clients.VaultKey) -> None:
        lease = self._current.pop(key)
        if lease.users > 0:
            self._retired.add(lease)
        else:
            await lease.session.close()
