"""
Waiting for asynchronous effects with a deadline, never with fixed sleeps.

An operator reacts to a change some time later, and how much later depends on
the machine's load; a test that sleeps a fixed time is either slow or flaky.
"""
import time
from collections.abc import Callable
from typing import Optional, TypeVar

T = TypeVar('T')


def poll(fn: Callable[[], Optional[T]], *, timeout: float = 20, interval: float = 0.2) -> T:
    """
    Call the function until it returns something truthy, and return that.

    Fails with the function's docstring (what was awaited) and its last result.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"Not reached in {timeout}s: {fn.__doc__ or fn!r}; the last result: {result!r}")
        time.sleep(interval)
