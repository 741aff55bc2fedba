"""
Throttling: the delays of an object's processing after unexpected errors.

An error that is not a handler's own (those are retried by the handlers'
machinery) may repeat on every event of the object, e.g. a bug in the
operator's filters or a broken API. Instead of spinning, the object's worker
waits for the next delay of ``settings.queueing.error_delays`` before
processing the latest state again; once the sequence is exhausted, its last
delay repeats for every further error (as the manual describes: 10, 20, 30,
30, 30, ...), and after a successful cycle, the worker starts a new sequence.
"""
from typing import Iterable, Iterator, Optional


class ErrorThrottler:
    """The delays after the consecutive failures of one object's cycles."""

    def __init__(self, delays: Iterable[float]) -> None:
        self._delays: Iterator[float] = iter(delays)
        self._last: Optional[float] = None

    def next_delay(self) -> Optional[float]:
        """The delay after one more failure (``None`` if no delays are configured)."""
        self._last = next(self._delays, self._last)
        return self._last
