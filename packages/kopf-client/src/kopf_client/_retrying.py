"""
The budget of retries of one API request: network errors, 5xx and 429.

Kubernetes API servers restart, aggregated APIs flap, load balancers drop
connections: such errors are presumed temporary and are retried with the
back-offs from ``settings.networking.error_backoffs``. Each request gets its
own budget (a fresh iteration of the back-offs), so a success resets the
intervals for the next request. When the budget is spent, the error of the
last attempt escalates to the caller — the framework then throttles the
object or the task, instead of the client blocking forever.

4xx errors are never retried here: the request is wrong and will stay wrong.
401 is not retried here either: it changes the credentials, not the timing,
and is bounded by the vault (which runs out of credentials eventually).
"""
from __future__ import annotations

import asyncio
import email.utils
import math
import time
from typing import Awaitable, Callable, Iterable, Iterator, Optional, Sized

import aiohttp

SleepFn = Callable[[float], Awaitable[None]]

# What is presumed to be a temporary problem of the network or the server process,
# not of the request. Timeouts are of single attempts: aiohttp's own timeouts
# (some of them are also ClientConnectionError) and those of the socket operations.
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    aiohttp.ClientConnectionError,  # incl. refused connections, resets, server disconnects
    aiohttp.ClientPayloadError,  # a body cut in the middle
    asyncio.TimeoutError,
)


class RetryBudget:
    """
    The remaining back-offs of one request, consumed one per failed attempt.

    It only counts and says how long to wait; the waiting itself is up to
    the caller (with an injectable sleep, so that tests need no real time).
    """

    def __init__(self, backoffs: Iterable[float]) -> None:
        self._backoffs: Iterator[float] = iter(backoffs)
        # Known in advance only for sized back-offs (lists, tuples), not for generators.
        self._planned: Optional[list[float]] = [float(b) for b in backoffs] if isinstance(backoffs, Sized) else None
        self.attempt = 1  # the number of the attempt currently in progress, for logging
        self.total = len(self._planned) + 1 if self._planned is not None else None

    @property
    def remaining(self) -> str:
        """What is left to try, in words for the logs: ``8 more attempts within 54 s`` (if known)."""
        if self._planned is None:
            return 'more attempts as the back-offs allow'
        left = self._planned[self.attempt - 1:]
        return f"{len(left)} more attempt{'s' if len(left) != 1 else ''} within {sum(left):g} s"

    @property
    def label(self) -> str:
        """The attempt as Kopf's log lines show it: ``#2/9`` (or ``#2`` if the total is unknown)."""
        return f'#{self.attempt}/{self.total}' if self.total is not None else f'#{self.attempt}'

    def take(self, *, delay: Optional[float] = None, enforce: bool = False) -> Optional[float]:
        """
        How long to wait before the next attempt, or ``None`` if there is none left.

        The delay, if given (e.g. from ``Retry-After``), is the least to wait:
        a longer back-off wins, unless the delay is enforced (then it replaces
        the back-off even if shorter). It consumes a back-off value either way,
        so that a server that keeps throttling is not retried endlessly.
        """
        backoff = next(self._backoffs, None)
        if backoff is None:
            return None
        self.attempt += 1
        if delay is None:
            return float(backoff)
        return float(delay if enforce else max(delay, backoff))


def parse_retry_after(value: Optional[str], *, now: Optional[float] = None) -> Optional[float]:
    """
    The delay in seconds from a ``Retry-After`` header, or ``None`` if absent/invalid.

    Kubernetes sends seconds; HTTP-dates are accepted too, as RFC 9110 allows
    them and proxies in front of the API server might send them.
    """
    if not value:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if moment.tzinfo is None:
            return None
        current = now if now is not None else time.time()
        return max(0.0, moment.timestamp() - current)
    if math.isnan(seconds) or math.isinf(seconds) or seconds < 0:
        return None
    return seconds
