"""
A progress display for the long, otherwise silent first build of the binaries.

A cold ``go build`` of the Kubernetes servers takes many minutes. Rather than
leave the user wondering whether anything happens, a background thread prints
a line to stderr every few seconds: what is being built, how long it has taken
so far, and the package that Go compiled last (the last line of the build log).
The final line says whether the step is done or failed.

The lines go to stderr, unless :func:`report_progress_to` sends them elsewhere:
pytest captures stderr while a fixture starts the control plane, so its plugin
sends them to the terminal, where the user sees them as the build goes.
"""
import contextlib
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Optional, TextIO

DEFAULT_INTERVAL = 15.0

_writers: list[Callable[[str], None]] = []  # the innermost last; none: stderr


@contextlib.contextmanager
def report_progress_to(write: Callable[[str], None]) -> Iterator[None]:
    """Send the progress lines of the builds in this block to ``write`` (one line per call) instead of stderr."""
    _writers.append(write)
    try:
        yield
    finally:
        _writers.remove(write)


class BuildProgress:
    """Report ``what`` with the elapsed time and the log's last line, until the block exits."""

    def __init__(self, what: str, log_path: pathlib.Path, *,
                 interval: float = DEFAULT_INTERVAL, stream: Optional[TextIO] = None) -> None:
        self._what = what
        self._log_path = log_path
        self._interval = interval
        self._stream = stream
        self._started = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._report_periodically, name='build progress', daemon=True)

    def __enter__(self) -> 'BuildProgress':
        self._started = time.monotonic()
        self._print(f'{self._what} (the log: {self._log_path}) ...')
        self._thread.start()
        return self

    def __exit__(self, et: Optional[type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self._done.set()
        self._thread.join()
        outcome = 'failed' if et is not None else 'done'
        self._print(f'{self._what}: {outcome} in {_format_duration(time.monotonic() - self._started)}.')

    def _report_periodically(self) -> None:
        while not self._done.wait(self._interval):
            elapsed = _format_duration(time.monotonic() - self._started)
            last_line = _read_last_line(self._log_path)
            self._print(f'{self._what}: {elapsed} elapsed' + (f'; last: {last_line}' if last_line else ''))

    def _print(self, line: str) -> None:
        if self._stream is None and _writers:
            _writers[-1](line)
        else:
            print(line, file=self._stream if self._stream is not None else sys.stderr, flush=True)


def _format_duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f'{minutes}m{seconds:02d}s' if minutes else f'{seconds}s'


def _read_last_line(path: pathlib.Path, *, tail_bytes: int = 4096) -> str:
    """The last non-empty line of a growing log file, or an empty string if there is none yet."""
    try:
        with path.open('rb') as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - tail_bytes))
            lines = f.read().decode(errors='replace').splitlines()
    except FileNotFoundError:
        return ''
    return next((line.strip() for line in reversed(lines) if line.strip()), '')
