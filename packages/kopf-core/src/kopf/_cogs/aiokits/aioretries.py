"""
Retries of the activities the operator cannot do without: never fatal, always said.

The API client retries each request a few times; a longer outage (an API
server or etcd restart, sustained 5xx/429, dropped connections) outlasts those
retries. The essential activities (the discovery, the watching of the CRDs and
the namespaces, the peering) must then not end the operator: each failure is
logged with what failed, the attempt and the delay, retried with growing
delays, and the recovery is said once. One policy for all of them, missing
permissions included, so it lives here, below every layer that needs it.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Optional, Sequence, TypeVar

logger = logging.getLogger('kopf.reactor.outages')

# Seconds between the attempts; the last one repeats for as long as the failures last.
BACKOFFS: Sequence[float] = (1, 2, 4, 8, 10)

T = TypeVar('T')


def backoff(failures: int, backoffs: Optional[Sequence[float]] = None) -> float:
    """The delay after this many failures in a row (the last delay repeats)."""
    delays = backoffs if backoffs is not None else BACKOFFS
    return delays[min(failures, len(delays) - 1)]


class Outage:
    """The retrying state of one essential activity: how many failures in a row."""

    def __init__(self, *, what: str, meanwhile: str,
                 backoffs: Optional[Sequence[float]] = None) -> None:
        self.what = what
        self.meanwhile = meanwhile
        self.backoffs = backoffs
        self.failures = 0

    async def wait(self, error: Exception) -> None:
        """Log the failure and sleep until the next attempt."""
        delay = backoff(self.failures, self.backoffs)
        self.failures += 1
        logger.error(f"Failed to {self.what}; retrying in {delay:g}s (attempt {self.failures}); "
                     f"{self.meanwhile}. The error: {error!r}")
        await asyncio.sleep(delay)

    def over(self) -> None:
        """Note a success: if there were failures before, say that it works again."""
        if self.failures:
            logger.info(f"Succeeded to {self.what} after {self.failures} failure(s).")
            self.failures = 0


async def persist(outage: Outage, attempt: Callable[[], Awaitable[T]]) -> T:
    """Repeat the attempt until it succeeds (or is cancelled), whatever it fails with."""
    while True:
        try:
            result = await attempt()
        except Exception as e:  # any failure: the API's, the network's, the client's after its retries
            await outage.wait(e)
        else:
            outage.over()
            return result
