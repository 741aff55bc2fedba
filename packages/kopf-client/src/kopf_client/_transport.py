"""
Sending requests: credentials from the vault, retries, errors.

Every attempt takes the credentials anew from the vault, so that a request
that waited through a re-login continues with the new credentials. What
happens on failures:

* A network error, a timeout of the attempt, a 5xx: retried after the next
  back-off of ``settings.networking.error_backoffs``; when they are over,
  the last error escalates (as :class:`kopf.clients.APIServerError` for 5xx).
* 429: retried after ``Retry-After`` (or the next back-off if the header is
  absent), also consuming one back-off, so that the throttling is bounded.
* 401: the credentials are reported to the vault as invalid, and the request
  is repeated with other credentials; if none are left, the vault makes it
  wait for a re-login, or raises :class:`kopf.LoginError` if that fails.
* Other 4xx: raised at once, with the ``Status`` object as the payload.
* Credentials that cannot even make a connection (e.g. a missing CA file or
  a malformed certificate) are invalidated as with 401.

Regular requests are retried until their body is fully read. Streams
(watching) are retried only until the response headers arrive; what happens
to the stream afterwards is up to the caller.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from typing import Any, AsyncIterator, Mapping, Optional

import aiohttp

import kopf
from kopf import clients
from kopf_client import _responses, _retrying, _sessions

logger = logging.getLogger(__name__)

Params = Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class Reply:
    """A successful response, and its parsed body (``None`` for streams: the caller reads them)."""
    response: aiohttp.ClientResponse
    payload: Any


# The most regular (non-streaming) requests in flight at once, per client. Each of them
# needs a connection of its own, and each TLS connection costs ~130 KiB of buffers while it
# stays in the pool: a burst of a thousand objects must not open a thousand connections.
# Streams (watches) are not limited: they hold their connections for minutes.
MAX_CONCURRENT_REQUESTS = 32


class Transport:
    """Sends requests on behalf of the API client; knows nothing about Kubernetes resources."""

    def __init__(
            self,
            *,
            vault: clients.Vault,
            settings: kopf.OperatorSettings,
            sleep: _retrying.SleepFn = asyncio.sleep,
    ) -> None:
        self._vault = vault
        self._settings = settings
        self._sleep = sleep
        self._sessions = _sessions.SessionPool(trust_env=lambda: settings.networking.trust_env)
        self._concurrency = asyncio.Semaphore(MAX_CONCURRENT_REQUESTS)

    async def close(self) -> None:
        await self._sessions.close()

    @property
    def sessions(self) -> _sessions.SessionPool:
        return self._sessions

    async def request(
            self,
            method: str,
            path: str,
            *,
            params: Optional[Params] = None,
            body: Any = None,
            content_type: Optional[str] = None,
            retry_server_errors: bool = True,
    ) -> Any:
        """
        Send a regular request and return its parsed JSON body (or ``None`` if empty).

        ``retry_server_errors=False`` makes 5xx escalate at once (network
        errors are still retried): for requests where a 5xx is a definitive
        answer of a live API server, e.g. about an aggregated API that is down.
        """
        networking = self._settings.networking
        timeout = aiohttp.ClientTimeout(total=networking.request_timeout, sock_connect=networking.connect_timeout)
        async with self._concurrency, self._exchange(
            method, path,
            params=params, body=body, content_type=content_type, timeout=timeout,
            stream=False, retry_server_errors=retry_server_errors,
        ) as reply:
            return reply.payload

    @contextlib.asynccontextmanager
    async def stream(
            self,
            method: str,
            path: str,
            *,
            params: Optional[Params] = None,
            timeout: aiohttp.ClientTimeout,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """
        Open a streaming response; it is closed (not drained) on exit.

        Closing instead of draining matters for watch-streams: they never end
        by themselves, so on cancellation the connection is dropped at once.
        """
        async with self._exchange(
            method, path,
            params=params, timeout=timeout, stream=True, retry_server_errors=True,
        ) as reply:
            try:
                yield reply.response
            finally:
                reply.response.close()

    @contextlib.asynccontextmanager
    async def _exchange(
            self,
            method: str,
            path: str,
            *,
            params: Optional[Params] = None,
            body: Any = None,
            content_type: Optional[str] = None,
            timeout: aiohttp.ClientTimeout,
            stream: bool,
            retry_server_errors: bool,
    ) -> AsyncIterator[Reply]:
        budget = _retrying.RetryBudget(self._settings.networking.iter_error_backoffs())
        headers = {'Content-Type': content_type} if content_type else {}
        data = None if body is None else json.dumps(body).encode('utf-8')
        if data is not None and not content_type:
            headers['Content-Type'] = 'application/json'

        while True:
            key, info = await self._vault.select()
            url = info.server.rstrip('/') + path
            what = f'{method} {url}'
            if budget.attempt > 1:
                logger.debug(f"Request attempt {budget.label}: {what}")
            async with contextlib.AsyncExitStack() as stack:
                try:
                    session = await stack.enter_async_context(self._sessions.session(key, info))
                except (OSError, ValueError) as exc:  # incl. ssl.SSLError
                    # Unusable TLS material (a missing CA file, a malformed certificate):
                    # as useless as a rejected token; other or re-obtained credentials may work.
                    logger.error(f"Credentials are unusable and are invalidated: {exc!r}")
                    await self._vault.invalidate(key, info, exc=exc)
                    continue
                try:
                    response = await stack.enter_async_context(session.request(
                        method, url, params=params, data=data, headers=headers, timeout=timeout,
                    ))
                    payload, text = (None, '') if stream and response.status < 400 else (
                        await _responses.read_body(response))
                except _retrying.NETWORK_ERRORS as exc:
                    if await self._should_retry(budget, what, exc):
                        continue
                    raise

                if response.status < 400:
                    if budget.attempt > 1:
                        logger.debug(f"Request attempt {budget.label} succeeded: {what}")
                    # Keep the session and the response open while the caller uses them.
                    yield Reply(response=response, payload=payload)
                    return

                error = _responses.make_error(
                    status=response.status, payload=payload, text=text, headers=response.headers)

            # The failed response is released and the session lease is returned by now.
            if isinstance(error, clients.APIUnauthorizedError):
                logger.debug(f"Request {method} {path} is unauthorized; invalidating the credentials: {error}")
                await self._vault.invalidate(key, info, exc=error)
                await self._sessions.retire(key, info)
                continue
            if isinstance(error, clients.APITooManyRequestsError):
                if await self._should_retry(budget, what, error, delay=error.retry_after):
                    continue
            elif isinstance(error, clients.APIServerError) and retry_server_errors:
                if await self._should_retry(budget, what, error):
                    continue
            raise error

    async def _should_retry(
            self,
            budget: _retrying.RetryBudget,
            what: str,
            exc: BaseException,
            *,
            delay: Optional[float] = None,
    ) -> bool:
        # In Kopf's words: users' tests and alerts may look for these lines.
        label = budget.label
        backoff = budget.take(delay=delay, enforce=self._settings.networking.enforce_retry_after)
        if backoff is None:
            logger.error(f"Request attempt {label} failed; escalating: {what} -> {exc!r}")
            return False
        logger.error(f"Request attempt {label} failed; will retry: {what} -> {exc!r}")
        await self._sleep(backoff)
        return True
