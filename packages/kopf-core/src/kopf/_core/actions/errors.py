"""
The exceptions that handlers raise to control their retrying.

Any other exception is "arbitrary" and treated per the handler's ``errors=``
mode (temporary with the backoff by default).
"""
from __future__ import annotations

from typing import Optional


class PermanentError(Exception):
    """A fatal handler error: the handler is never retried."""


class TemporaryError(Exception):
    """A recoverable handler error: the handler is retried after the delay."""

    def __init__(self, __msg: Optional[str] = None, delay: Optional[float] = 60) -> None:
        super().__init__(__msg)
        self.delay = delay


class HandlerTimeoutError(PermanentError):
    """The handler has been retried for longer than its ``timeout=``."""


class HandlerRetriesError(PermanentError):
    """The handler has been retried more times than its ``retries=``."""


class HandlerChildrenRetry(TemporaryError):
    """An internal retry: the parent waits for its unfinished sub-handlers."""
