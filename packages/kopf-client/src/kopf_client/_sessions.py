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

A login handler may return its own aiohttp session instead (:class:`AiohttpSession`):
it is used as it is (its headers, TLS, proxy, timeouts, limits), with this
client's retries and request slots on top. As in Kopf, the operator owns it
from then on and closes it when it is retired (unless other credentials in
use still carry the same session) or when the client is closed.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.metadata
from typing import AsyncIterator, Callable, Dict, Mapping, Optional, Set, Tuple

import aiohttp

from kopf import clients
from kopf_client import _proxies, _tls

# What is the aiohttp session's to define, not the credentials': refused in AiohttpSession.
_SESSION_DEFINED = ('ca_path', 'ca_data', 'insecure', 'username', 'password', 'scheme', 'token',
                    'certificate_path', 'certificate_data', 'private_key_path', 'private_key_data',
                    'trust_env', 'proxy_url')


@dataclasses.dataclass(frozen=True, repr=False, kw_only=True)
class AiohttpSession(clients.ConnectionInfo):
    """
    A login handler's own aiohttp session, to send the API requests with (``kopf.AiohttpSession``).

    As in Kopf, it has the server (the requests' base URL), the default
    namespace, the priority and the expiration of credentials; everything
    else (the authentication, TLS, proxies) is the session's own, set when it
    is created. The operator adds only a ``User-Agent`` header, if the
    session has none, and closes the session when it is no longer used.
    """
    aiohttp_session: aiohttp.ClientSession

    def __post_init__(self) -> None:
        given = [name for name in _SESSION_DEFINED if getattr(self, name) not in (None, False)]
        if given:
            raise TypeError(f"kopf.AiohttpSession takes the connection's settings from its aiohttp session, "
                            f"so {', '.join(given)} would be ignored: set them up in the aiohttp session instead "
                            f"(or return a kopf.ConnectionInfo).")
        if not isinstance(self.aiohttp_session, aiohttp.ClientSession):
            raise TypeError(f"kopf.AiohttpSession needs an aiohttp.ClientSession as aiohttp_session, "
                            f"not {type(self.aiohttp_session).__name__}.")


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
) -> Tuple[aiohttp.ClientSession, Optional[str]]:
    """
    A session that authenticates every request with these credentials, and the proxy for its requests.

    A token wins over a username/password pair: both go into the same
    ``Authorization`` header, and only one can be sent. The connection pool is
    unlimited: watch streams hold their connections for minutes, and a limit
    would make the regular requests wait behind them. With ``trust_env`` (of
    the settings or the credentials), the proxy variables and ``~/.netrc`` apply;
    the credentials' own ``proxy_url`` wins over them.
    """
    if isinstance(info, AiohttpSession):
        session = info.aiohttp_session
        if session.headers.get('User-Agent') is None:  # as Kopf does: the only change to the user's session
            session.headers['User-Agent'] = _user_agent()
        return session, None
    ssl_context = _tls.make_ssl_context(info)  # first: if it fails, no secrets are in this frame's locals
    connector, proxy = _proxies.make_connector(info.proxy_url, ssl_context=ssl_context)
    all_headers: Dict[str, str] = {'User-Agent': _user_agent(), **(headers or {}), **_authorization(info)}
    session = aiohttp.ClientSession(connector=connector, headers=all_headers, trust_env=trust_env or info.trust_env)
    return session, proxy


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
    """The ``Authorization`` header of these credentials, if any, hidden from reprs."""
    return {name: HiddenStr(value) for name, value in info.as_http_headers().items()}


# How long to let the closed TLS connections shut down (aiohttp's own advice for graceful exits).
TLS_CLOSING_GRACE = 0.25


@dataclasses.dataclass(eq=False)
class Lease:
    """A session in use by one request or stream: counted, so that a retired session is closed when unused."""
    info: clients.ConnectionInfo
    session: aiohttp.ClientSession
    proxy: Optional[str] = None  # for every request of the session (an HTTP proxy is per request in aiohttp)
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
            await self._close_unless_shared(lease)

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
        for session in {id(lease.session): lease.session for lease in leases}.values():
            await session.close()
        if leases:
            # TLS transports finish closing in the next iterations of the loop; without this
            # pause, a loop closed right after the client leaves them unclosed (ResourceWarning).
            await asyncio.sleep(TLS_CLOSING_GRACE)

    async def lease(self, key: clients.VaultKey, info: clients.ConnectionInfo) -> Lease:
        """The session of these credentials, counted as in use until given back."""
        if self._closed:
            raise RuntimeError("The API client is closed and cannot make requests anymore.")
        lease = self._current.get(key)
        if lease is None or lease.info != info:  # new, or re-populated with new credentials
            replaced = lease
            session, proxy = make_session(info, headers=self._headers, trust_env=self._trust_env())
            lease = self._current[key] = Lease(info=info, session=session, proxy=proxy)
            if replaced is not None:  # after the new one is in place: it might carry the same session
                await self._retire_lease(replaced)
        lease.users += 1
        return lease

    async def _retire(self, key: clients.VaultKey) -> None:
        await self._retire_lease(self._current.pop(key))

    async def _retire_lease(self, lease: Lease) -> None:
        if lease.users > 0:
            self._retired.add(lease)
        else:
            await self._close_unless_shared(lease)

    async def _close_unless_shared(self, lease: Lease) -> None:
        """
        Close the lease's session, unless other credentials in use carry the same one.

        Ours are never shared; a login handler's session can be, e.g. when it returns the same
        session with a new expiration on every login: closing it would break its new credentials.
        """
        others = [*self._current.values(), *self._retired]
        if not any(other.session is lease.session for other in others if other is not lease):
            await lease.session.close()
