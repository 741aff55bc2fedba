"""
The logs of operators under test: waiting for lines, and finding unexpected errors.

An operator that logs an error while the test passes is usually broken in a
way that the test did not look at (a failed handler being retried, a watch
that cannot start). The ``operator`` fixture fails the test on such errors
unless the test lists them as expected.
"""
import abc
import re
import time
from collections.abc import Iterable
from typing import Optional

from kopf_testing._polling import DEFAULT_TIMEOUT, patient

# The level in kopf's default log format: ``[time] logger-name [ERROR   ] message``.
_ERROR_LEVEL = re.compile(r'^\[[^\]]*\] \S+\s+\[(ERROR|CRITICAL)\s*\] ')


def find_error_lines(log: str) -> list[str]:
    """The lines of a log in kopf's default format that were logged as errors."""
    return [line for line in log.splitlines() if _ERROR_LEVEL.match(line)]


def unexpected(error_lines: Iterable[str], expected: Iterable[str]) -> list[str]:
    """The error lines that match none of the expected patterns (regexps searched in the line)."""
    patterns = [re.compile(pattern) for pattern in expected]
    return [line for line in error_lines if not any(pattern.search(line) for pattern in patterns)]


class OperatorLog(abc.ABC):
    """What every kind of operator under test offers: its log, the errors in it, and waiting for lines."""

    poll_interval = 0.05

    @property
    @abc.abstractmethod
    def log(self) -> str:
        """The operator's log so far, in kopf's default format."""

    @abc.abstractmethod
    def _why_stopped(self) -> Optional[str]:
        """Why the operator does not run (anymore), or ``None`` if it runs."""

    @property
    def error_lines(self) -> list[str]:
        """The lines logged at the ERROR or CRITICAL level so far."""
        return find_error_lines(self.log)

    def wait_for(self, pattern: str, *, timeout: float = DEFAULT_TIMEOUT, count: int = 1) -> str:
        """Wait until the log has the pattern (a regexp) at least ``count`` times; return the log."""
        timeout = patient(timeout)
        deadline = time.monotonic() + timeout
        regexp = re.compile(pattern)
        while True:
            log = self.log
            if len(regexp.findall(log)) >= count:
                return log
            stopped = self._why_stopped()
            if stopped is not None:
                raise AssertionError(f"The operator {stopped} before logging {pattern!r}:\n{log}")
            if time.monotonic() > deadline:
                raise AssertionError(f"The operator has not logged {pattern!r} in {timeout}s:\n{log}")
            time.sleep(self.poll_interval)
