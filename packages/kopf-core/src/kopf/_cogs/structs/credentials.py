"""
Credentials: what login handlers return, and the vault that keeps them.

Login handlers (``@kopf.on.login``) return :class:`ConnectionInfo` items; they
all go into one :class:`Vault`. API clients take random valid credentials from
the vault for each request. A 401 makes the client report the credentials as
invalid; they are removed and never accepted again (so that a login handler
returning the same stale token cannot cause a never-ending re-login loop).
When the vault is depleted, requests wait until the authenticator (an engine
activity) runs the login handlers again and re-populates it; if that yields
nothing usable, the waiting requests fail with :class:`LoginError`.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime
import importlib
import random
import ssl
import urllib.parse
from typing import Any, AsyncIterator, Dict, Mapping, NewType, Optional, Tuple

from kopf._cogs.structs import tlscontexts

VaultKey = NewType('VaultKey', str)


class LoginError(Exception):
    """Raised when the operator cannot log in to the cluster (no valid credentials)."""


# The fields whose values are secrets: never shown in reprs (which reach logs, error trackers, test reports).
# The paths, the CA and the client certificate are not secrets; the username is an identity, not a secret.
SECRET_FIELDS = frozenset({'password', 'token', 'private_key_data'})


@dataclasses.dataclass(frozen=True, repr=False)
class ConnectionInfo:
    """A single endpoint with specific credentials and connection flags to use."""
    server: str  # e.g. "https://localhost:443"
    ca_path: Optional[str] = None
    ca_data: Optional[bytes] = None
    insecure: Optional[bool] = None
    username: Optional[str] = None
    password: Optional[str] = None
    scheme: Optional[str] = None  # RFC-7235/5.1: e.g. Bearer, Basic, Digest, etc.
    token: Optional[str] = None
    certificate_path: Optional[str] = None
    certificate_data: Optional[bytes] = None
    private_key_path: Optional[str] = None
    private_key_data: Optional[bytes] = None
    default_namespace: Optional[str] = None  # used for cluster objects' namespace fallbacks
    priority: int = 0
    expiration: Optional[datetime.datetime] = None  # TZ-naive means UTC
    trust_env: bool = False  # use the proxy variables & ~/.netrc (also if settings.networking.trust_env)
    proxy_url: Optional[str] = None  # http(s)://, or socks5:// with aiohttp-socks; wins over the proxy variables

    def __repr__(self) -> str:
        """As the dataclass's own repr, but with the secrets hidden (``None`` is shown: it says they are absent)."""
        shown = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            hidden = field.name in SECRET_FIELDS and value is not None
            shown.append(f'{field.name}={"<hidden>" if hidden else repr(_without_password(value))}')
        return f'{type(self).__qualname__}({", ".join(shown)})'

    @property
    def expiration_utc(self) -> Optional[datetime.datetime]:
        """The expiration as an aware UTC datetime (naive values are taken as UTC)."""
        if self.expiration is None:
            return None
        if self.expiration.tzinfo is None:
            return self.expiration.replace(tzinfo=datetime.timezone.utc)
        return self.expiration.astimezone(datetime.timezone.utc)

    def is_expired(self, now: Optional[datetime.datetime] = None) -> bool:
        expiration = self.expiration_utc
        if expiration is None:
            return False
        now = now if now is not None else datetime.datetime.now(datetime.timezone.utc)
        return expiration <= now

    def as_http_headers(self) -> Dict[str, str]:
        """The ``Authorization`` header of these credentials (none if they have no token or username)."""
        return tlscontexts.make_authorization(self)

    def as_ssl_context(self) -> ssl.SSLContext:
        """The TLS context: the trusted CA, the verification (unless insecure), the client certificate."""
        return tlscontexts.make_ssl_context(self)

    def as_aiohttp_basic_auth(self) -> Optional[Any]:
        """The username and password as ``aiohttp.BasicAuth`` (for one's own aiohttp sessions), if any."""
        if self.username is None:
            return None
        try:  # imported here: the core itself does not depend on aiohttp
            aiohttp = importlib.import_module('aiohttp')
        except ImportError as e:
            raise ImportError("ConnectionInfo.as_aiohttp_basic_auth() needs aiohttp: pip install aiohttp") from e
        return aiohttp.BasicAuth(self.username, self.password or '')


def _without_password(value: object) -> object:
    """A URL with the password hidden (e.g. a proxy's ``http://user:secret@host``); other values as they are."""
    if not isinstance(value, str) or '://' not in value or '@' not in value:
        return value
    parts = urllib.parse.urlsplit(value)
    if parts.password is None:
        return value
    netloc = f'{parts.username or ""}:<hidden>@{parts.netloc.rsplit("@", 1)[1]}'
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


@dataclasses.dataclass
class _VaultItem:
    info: ConnectionInfo


class Vault:
    """
    A store of credentials, shared by login handlers and the API clients.

    Unlike a plain dict, it remembers the credentials that were found invalid
    (to refuse them when a login handler returns them again), and it lets the
    readers wait while the credentials are being re-obtained.
    """

    def __init__(self, items: Optional[Mapping[str, ConnectionInfo]] = None) -> None:
        # Since Python 3.10, asyncio primitives bind to a loop on first use, not
        # on creation, so a vault can be made outside of any loop (CLI, tests).
        self._current: Dict[VaultKey, _VaultItem] = {}
        self._invalid: Dict[VaultKey, list[ConnectionInfo]] = {}
        self._lock = asyncio.Lock()
        self._ready = asyncio.Event()  # set when there are credentials or a final failure
        self._depleted = asyncio.Event()  # set when there are no credentials
        self._failure: Optional[BaseException] = None
        for key, info in (items or {}).items():
            self._current[VaultKey(key)] = _VaultItem(info)
        self._set_readiness()

    def _set_readiness(self) -> None:
        if self._current or self._failure is not None:
            self._ready.set()
        else:
            self._ready.clear()
        if self._current:
            self._depleted.clear()
        else:
            self._depleted.set()

    def __repr__(self) -> str:
        return f'<{type(self).__name__}: {list(self._current)!r}>'

    def __bool__(self) -> bool:
        self._purge_expired()
        return bool(self._current)

    async def __aiter__(self) -> AsyncIterator[Tuple[VaultKey, ConnectionInfo]]:
        """Yield the valid credentials in random order (until the caller stops)."""
        while True:
            key, info = await self.select()
            yield key, info

    def _purge_expired(self) -> None:
        now = datetime.datetime.now(datetime.timezone.utc)
        for key, item in list(self._current.items()):
            if item.info.is_expired(now):
                del self._current[key]
        self._set_readiness()

    async def select(self) -> Tuple[VaultKey, ConnectionInfo]:
        """
        Get random credentials of the highest priority, waiting if there are none.

        Raises :class:`LoginError` if the last re-login attempt produced nothing.
        """
        while True:
            self._purge_expired()
            if self._current:
                top = max(item.info.priority for item in self._current.values())
                keys = [key for key, item in self._current.items() if item.info.priority == top]
                key = random.choice(keys)
                return key, self._current[key].info
            if self._failure is not None:
                raise LoginError(str(self._failure)) from self._failure
            await self._ready.wait()

    async def invalidate(self, key: VaultKey, info: ConnectionInfo, *, exc: Optional[BaseException] = None) -> None:
        """
        Mark the credentials as invalid (e.g. after a 401): never to be used again.

        Only the exact credentials reported are invalidated: if the key was
        meanwhile re-populated with new credentials, those stay.

        With ``exc`` (the error that made them invalid) and no credentials left,
        wait until they are re-obtained; if that fails, raise :class:`LoginError`
        from ``exc`` in the caller's stack, so that its traceback shows both.
        """
        async with self._lock:
            self._invalid.setdefault(key, []).append(info)
            item = self._current.get(key)
            if item is not None and item.info == info:
                del self._current[key]
            self._set_readiness()
        if exc is not None and not self._current:
            await self._ready.wait()
            if not self._current and self._failure is not None:
                raise LoginError(f"Re-authentication after {exc!r} has failed: {self._failure}") from exc

    async def populate(self, items: Mapping[str, ConnectionInfo]) -> None:
        """Add new credentials; those known to be invalid are silently ignored."""
        async with self._lock:
            for key, info in items.items():
                vkey = VaultKey(key)
                if info in self._invalid.get(vkey, []):
                    continue
                self._current[vkey] = _VaultItem(info)
            if self._current:
                self._failure = None
            self._set_readiness()

    async def fail(self, exc: BaseException) -> None:
        """Make all current and future waiters fail: re-login produced nothing usable."""
        async with self._lock:
            self._failure = exc
            self._set_readiness()  # wake the waiters so that they see the failure

    async def wait_for_emptiness(self) -> None:
        """
        Wait until the vault has no valid credentials (so that re-login is needed).

        Expiring credentials are dropped when they expire, not only when used:
        so the re-login happens in time even if no request is made meanwhile.
        """
        while True:
            self._purge_expired()
            if self._depleted.is_set():
                return
            expirations = [item.info.expiration_utc for item in self._current.values()]
            deadlines = [ts for ts in expirations if ts is not None]
            timeout = None
            if deadlines:
                now = datetime.datetime.now(datetime.timezone.utc)
                timeout = max(0.0, (min(deadlines) - now).total_seconds())
            try:
                await asyncio.wait_for(self._depleted.wait(), timeout=timeout)
            except asyncio.TimeoutError:
                pass  # some credentials have expired: purge them and check again

    def is_empty(self) -> bool:
        self._purge_expired()
        return not self._current

