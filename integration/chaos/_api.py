"""
The harness's own way to the API server: direct (never through the proxy), patient.

The workload and the observer must keep working while the API server or etcd
restart under them, so every request is retried on connection errors, 429
and 5xx until its deadline; other answers are returned as they are.
"""
import asyncio
import json
import pathlib
import ssl
import time
from typing import Any

import aiohttp

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
# Closed TLS connections finish closing in the next iterations of the loop (aiohttp's advice: a pause
# after closing a session); a loop ended right after would leave their sockets unclosed (ResourceWarning).
TLS_CLOSING_GRACE = 0.25


class ApiError(Exception):
    """The API server did not answer usefully before the deadline."""


class Api:
    def __init__(self, server: str, ca_path: pathlib.Path, token: str) -> None:
        self.server = server.rstrip('/')
        self.token = token
        self.ssl_context = ssl.create_default_context(cafile=str(ca_path))
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> 'Api':
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self.ssl_context, limit=50),
            headers={'Authorization': f'Bearer {self.token}'},
        )
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._session is not None:
            await self._session.close()
            await asyncio.sleep(TLS_CLOSING_GRACE)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError('The API client is used outside of its `async with`.')
        return self._session

    async def request(self, method: str, path: str, body: Any = None, *, timeout: float = 120,
                      content_type: str = 'application/json') -> tuple[int, Any]:
        """The status and the decoded JSON body; retried on transient failures until ``timeout``."""
        deadline = time.monotonic() + timeout
        data = None if body is None else json.dumps(body)
        headers = {'Content-Type': content_type} if data is not None else {}
        last: str = ''
        while time.monotonic() < deadline:
            try:
                async with self.session.request(method, self.server + path, data=data, headers=headers,
                                                timeout=aiohttp.ClientTimeout(total=30)) as response:
                    payload = await response.read()
                    if response.status not in RETRIED_STATUSES:
                        return response.status, json.loads(payload) if payload else None
                    last = f'{response.status} {payload[:200]!r}'
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                last = repr(exc)
            await asyncio.sleep(1)
        raise ApiError(f'{method} {path} failed for {timeout}s; the last failure: {last}')
