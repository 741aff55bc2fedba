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
import logging
import time
from typing import Any, AsyncIterator, Dict, Iterable, Mapping, Optional

import aiohttp

import kopf
import kopf.metrics
from kopf import clients
from kopf_client import _jsons, _responses, _retrying, _sessions, _slots

logger = logging.getLogger(__name__)

Params = Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class Reply:
    """A successful response, and its parsed body (``None`` for streams: the caller reads them)."""
    response: aiohttp.ClientResponse
    payload: Any
    lease: _sessions.Lease  # the session's, given back when the response is released


def _encode(body: Any, content_type: Optional[str]) -> tuple[Dict[str, str], Optional[bytes]]:
    """The request's headers and data: JSON unless the content type says otherwise."""
    if body is None:
        return ({'Content-Type': content_type} if content_type else {}), None
    return {'Content-Type': content_type or 'application/json'}, _jsons.dumps(body)


# The most regular (non-streaming) requests in flight at once, per client. Each of them
# needs a connection of its own, and each TLS connection costs ~130 KiB of buffers while it
# stays in the pool: a burst of a thousand objects must not open a thousand connections.
# Fewer make a burst's objects wait in the operator while the API server serves the other
# clients: with 32, a burst of 5,000 objects waited 15 s at the median, with 100 it waited
# 9.6 s, for ~20 MiB more at the peak (benchmarks/results/connections/).
# The waiting ones go by the framework's priority hint (see `_slots`).
# Streams (watches) are not limited: they hold their connections for minutes.
MAX_CONCURRENT_REQUESTS = 100


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
        self._concurrency = _slots.PrioritySlots(MAX_CONCURRENT_REQUESTS)

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
            backoffs: Optional[Iterable[float]] = None,
            reader: _responses.BodyReader = _responses.read_json,
    ) -> Any:
        """
        Send a regular request and return its parsed JSON body (or ``None`` if empty).

        ``reader`` reads a successful response's body (e.g. a listing's items as their texts).

        ``retry_server_errors=False`` makes 5xx escalate at once (network
        errors are still retried): for requests where a 5xx is a definitive
        answer of a live API server, e.g. about an aggregated API that is down.
        ``backoffs`` replace ``settings.networking.error_backoffs`` for this
        request (empty: no retries), for callers that retry on their own.
        """
        networking = self._settings.networking
        timeout = aiohttp.ClientTimeout(total=networking.request_timeout, sock_connect=networking.connect_timeout)
        await self._concurrency.acquire()
        try:
            reply = await self._send(method, path, params=params, body=body, content_type=content_type,
                                     timeout=timeout, stream=False, retry_server_errors=retry_server_errors,
                                     backoffs=backoffs, reader=reader)
        finally:
            self._concurrency.release()
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
        reply = await self._send(method, path, params=params, timeout=timeout,
                                 stream=True, retry_server_errors=True)
        try:
            yield reply.response
        finally:
            reply.response.close()
            await self._finish(reply.response, reply.lease)

    async def _send(
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
            backoffs: Optional[Iterable[float]] = None,
            reader: _responses.BodyReader = _responses.read_json,
    ) -> Reply:
        """
        Send the request until it succeeds or there is nothing left to retry (see the module's docstring).

        A regular request is read and released here. A stream's reply keeps its
        response and its session's lease: the caller gives them back with ``_finish``.
        Plain coroutines rather than context managers: this runs for every request.
        """
        budget = _retrying.RetryBudget(self._settings.networking.iter_error_backoffs()
                                       if backoffs is None else backoffs)
        headers, data = _encode(body, content_type)
        while True:
            key, info = await self._vault.select()
            url = info.server.rstrip('/') + path
            what = f'{method} {url}'
            if budget.attempt > 1:
                logger.debug(f"Request attempt {budget.label}: {what}")
            lease = await self._lease(key, info)
            if lease is None:
                continue
            received = await self._request(
                key, info, lease, budget, what, method, url,
                params=params, data=data, headers=headers, timeout=timeout, stream=stream, reader=reader)
            if received is None:
                continue
            response, payload, text = received
            if response.status < 400:
                if budget.attempt > 1:  # after a failure warned about: it is over now
                    logger.info(f"Request attempt {budget.label} succeeded: {what}")
                if not stream:
                    await self._finish(response, lease)
                return Reply(response=response, payload=payload, lease=lease)
            await self._finish(response, lease)
            error = _responses.make_error(status=response.status, payload=payload, text=text,
                                          headers=response.headers)
            await self._retry_or_raise(key, info, budget, what, f'{method} {path}', error,
                                       retry_server_errors=retry_server_errors)

    async def _lease(self, key: clients.VaultKey, info: clients.ConnectionInfo) -> Optional[_sessions.Lease]:
        """A session for the credentials; none if they cannot make one (they are invalidated then)."""
        try:
            return await self._sessions.lease(key, info)
        except (OSError, ValueError) as exc:  # incl. ssl.SSLError
            # Unusable TLS material (a missing CA file, a malformed certificate):
            # as useless as a rejected token; other or re-obtained credentials may work.
            logger.error(f"Credentials are unusable and are invalidated: {exc!r}")
            await self._vault.invalidate(key, info, exc=exc)
            return None

    async def _request(
            self,
            key: clients.VaultKey,
            info: clients.ConnectionInfo,
            lease: _sessions.Lease,
            budget: _retrying.RetryBudget,
            what: str,
            method: str,
            url: str,
            *,
            params: Optional[Params],
            data: Optional[bytes],
            headers: Dict[str, str],
            timeout: aiohttp.ClientTimeout,
            stream: bool,
            reader: _responses.BodyReader,
    ) -> Optional[tuple[aiohttp.ClientResponse, Any, str]]:
        """
        One attempt: the response with its payload & text (read unless a successful stream).

        None if the attempt is to be repeated: after a retried network error, or with other
        credentials if the session of these ones is closed; the lease is given back then.
        """
        response: Optional[aiohttp.ClientResponse] = None
        started = time.monotonic()
        try:
            response = await lease.session.request(
                method, url, params=params, data=data, headers=headers, timeout=timeout, proxy=lease.proxy)
            payload, text = await _responses.read_body(response, None if stream else reader)
        except _retrying.NETWORK_ERRORS as exc:
            kopf.metrics.record_api_request('WATCH' if stream else method, 'error', time.monotonic() - started)
            await self._finish(response, lease)
            if await self._should_retry(budget, what, exc):
                return None
            raise
        except RuntimeError as exc:
            await self._finish(response, lease)
            if not lease.session.closed:
                raise
            # A login handler's own session, closed by its owner: as useless as a rejected token.
            logger.error(f"The session of the credentials is closed; they are invalidated: {what}")
            await self._vault.invalidate(key, info, exc=exc)
            await self._sessions.retire(key, info)
            return None
        except BaseException:
            await self._finish(response, lease)
            raise
        kopf.metrics.record_api_request('WATCH' if stream else method, str(response.status),
                                        time.monotonic() - started)
        return response, payload, text

    async def _retry_or_raise(
            self,
            key: clients.VaultKey,
            info: clients.ConnectionInfo,
            budget: _retrying.RetryBudget,
            what: str,
            request: str,
            error: clients.APIError,
            *,
            retry_server_errors: bool,
    ) -> None:
        """Return if the failed request is to be repeated (after a back-off, or with other credentials), else raise."""
        if isinstance(error, clients.APIUnauthorizedError):
            logger.debug(f"Request {request} is unauthorized; invalidating the credentials: {error}")
            await self._vault.invalidate(key, info, exc=error)
            await self._sessions.retire(key, info)
            return
        if isinstance(error, clients.APITooManyRequestsError):
            if await self._should_retry(budget, what, error, delay=error.retry_after):
                return
        elif isinstance(error, clients.APIServerError) and retry_server_errors:
            if await self._should_retry(budget, what, error):
                return
        raise error

    async def _finish(self, response: Optional[aiohttp.ClientResponse], lease: _sessions.Lease) -> None:
        """Release the response (as aiohttp's own context manager does) and give the session back."""
        try:
            if response is not None:
                response.release()
                await response.wait_for_close()
        finally:
            await self._sessions.give_back(lease)

    async def _should_retry(
            self,
            budget: _retrying.RetryBudget,
            what: str,
            exc: BaseException,
            *,
            delay: Optional[float] = None,
    ) -> bool:
        # In Kopf's words (users' tests and alerts may look for them), but not one ERROR per attempt:
        # the first failure says what is retried and for how long, the next ones go to DEBUG;
        # the escalation ends the story only if it was told (the caller reports the error anyway).
        label, first, remaining = budget.label, budget.attempt == 1, budget.remaining
        backoff = budget.take(delay=delay, enforce=self._settings.networking.enforce_retry_after)
        if backoff is None:
            level = logging.DEBUG if first else logging.WARNING
            logger.log(level, f"Request attempt {label} failed; escalating: {what} -> {_describe(exc)}")
            return False
        if first:
            logger.warning(f"Request attempt {label} failed; will retry: {what} -> {_describe(exc)} "
                           f"({remaining}; the next failures are logged at the DEBUG level)")
        else:
            logger.debug(f"Request attempt {label} failed; will retry: {what} -> {_describe(exc)}")
        await self._sleep(backoff)
        return True


def _describe(exc: BaseException) -> str:
    """
    The error for the log lines: its repr, as in Kopf, but shorter for aiohttp's errors.

    Their reprs carry the whole connection key (e.g. ``ConnectionKey(host=..., ssl=..., proxy=...,
    proxy_auth=..., ...)``) before the reason; their messages say the same in a few words.
    """
    if isinstance(exc, aiohttp.ClientError) and str(exc):
        return f'{type(exc).__name__}({str(exc)!r})'
    return repr(exc)
