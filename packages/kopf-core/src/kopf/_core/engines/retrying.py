"""
Retrying of one API request with explicitly given back-offs (e.g. posting's).

The client retries the networking errors and 5xx with ``settings.networking``'s
back-offs on its own; some requests of the framework have back-offs of their
own instead (they ask the client for no retries of its own): the k8s-events are
retried with ``settings.posting``'s ``default_backoffs`` or ``logging_backoffs``,
or the ``backoffs=`` of the call.

Which errors are retried is as in Kopf 1.45: the server's errors (5xx), being
throttled (429, at least for as long as the server asks), being forbidden (403:
RBAC changes in flight, e.g. during upgrades), and errors of the networking.
Other API errors (404, 409, 422, ...) will not go away by waiting: they
escalate at once. The attempts are logged with the same lines as the client's.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Iterable, Iterator, Optional, Sized, TypeVar, Union

from kopf._cogs.clients import errors
from kopf._cogs.configs import configuration

ResultT = TypeVar('ResultT')

Backoffs = Union[float, Iterable[float]]

_RETRIED_API_ERRORS = (errors.APIServerError, errors.APITooManyRequestsError, errors.APIForbiddenError)


def iter_backoffs(backoffs: Backoffs) -> Iterable[float]:
    """A single number means a single back-off (one retry), as in ``settings.networking``."""
    if isinstance(backoffs, (int, float)):
        return (float(backoffs),)
    return backoffs


def is_retried(exc: BaseException) -> bool:
    """Whether waiting might help: retried API errors, and any non-API error (the networking)."""
    if isinstance(exc, errors.APIError):
        return isinstance(exc, _RETRIED_API_ERRORS)
    return isinstance(exc, Exception)


async def request_with_backoffs(
        request: Callable[[], Awaitable[ResultT]],
        *,
        what: str,
        backoffs: Backoffs,
        settings: configuration.OperatorSettings,
        logger: logging.Logger,
) -> ResultT:
    """Make the request until it succeeds or the back-offs are over; then its last error escalates."""
    delays = iter(iter_backoffs(backoffs))
    total = _count(backoffs)
    attempt = 1
    while True:
        label = f'#{attempt}/{total}' if total is not None else f'#{attempt}'
        if attempt > 1:
            logger.debug(f"Request attempt {label}: {what}")
        try:
            result = await request()
        except Exception as exc:
            if not is_retried(exc):
                raise
            delay = _next_delay(delays, exc, settings=settings)
            if delay is None:
                logger.error(f"Request attempt {label} failed; escalating: {what} -> {exc!r}")
                raise
            logger.error(f"Request attempt {label} failed; will retry: {what} -> {exc!r}")
            await asyncio.sleep(delay)
            attempt += 1
        else:
            if attempt > 1:
                logger.debug(f"Request attempt {label} succeeded: {what}")
            return result


def _count(backoffs: Backoffs) -> Optional[int]:
    """The number of attempts, if known (not for generators and other one-pass iterables)."""
    delays = iter_backoffs(backoffs)
    return len(delays) + 1 if isinstance(delays, Sized) else None


def _next_delay(
        delays: Iterator[float],
        exc: BaseException,
        *,
        settings: configuration.OperatorSettings,
) -> Optional[float]:
    """The next back-off; a throttled request waits at least as long as the server asks."""
    delay = next(delays, None)
    if delay is None:
        return None
    retry_after = exc.retry_after if isinstance(exc, errors.APITooManyRequestsError) else None
    if retry_after is None:
        return float(delay)
    if settings.networking.enforce_retry_after:
        return float(retry_after)
    return float(max(delay, retry_after))
