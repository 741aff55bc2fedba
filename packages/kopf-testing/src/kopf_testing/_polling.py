"""
Waiting for asynchronous effects with a deadline, never with fixed sleeps.

An operator reacts to a change some time later, and how much later depends on
the machine's load; a test that sleeps a fixed time is either slow or flaky.
"""
import os
import time
from collections.abc import Callable
from typing import Optional, TypeVar

T = TypeVar('T')

# How long the waits for an operator's effects (a log line, an object's state, a deletion) wait by default.
# A waiting test returns as soon as its condition holds, so this costs nothing while things work; it only
# decides when a test gives up. An operator's start-up alone (its imports and logins) took 35-40 s on a
# 2-core machine at a load of 20: a bound near the quiet machine's figures makes tests red by chance.
DEFAULT_TIMEOUT = 120.0
PATIENCE_VARIABLE = 'KOPF_TESTING_PATIENCE'


def patient(timeout: float) -> float:
    """
    The timeout of a wait, stretched by ``$KOPF_TESTING_PATIENCE`` (a factor; 1 if unset).

    For a slow or busy machine (a CI runner, tests in parallel workers), every wait of
    kopf-testing gives up that many times later, explicit timeouts included; a wait still
    returns as soon as its condition holds.
    """
    text = os.environ.get(PATIENCE_VARIABLE, '')
    try:
        factor = float(text) if text else 1.0
    except ValueError:
        factor = 0.0
    if not factor > 0:  # also NaN
        raise ValueError(f"${PATIENCE_VARIABLE} must be a positive number (a factor for the waits' timeouts), "
                         f"not {text!r}: e.g. {PATIENCE_VARIABLE}=2, or unset it.")
    return timeout * factor


def poll(fn: Callable[[], Optional[T]], *, timeout: float = DEFAULT_TIMEOUT, interval: float = 0.2) -> T:
    """
    Call the function until it returns something truthy, and return that.

    Fails with the function's docstring (what was awaited) and its last result.
    """
    timeout = patient(timeout)
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"Not reached in {timeout}s: {fn.__doc__ or fn!r}; the last result: {result!r}")
        time.sleep(interval)
