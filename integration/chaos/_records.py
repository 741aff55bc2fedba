"""
Journals of a soak: append-only files of JSON lines, one event per line.

The operator's handlers write their runs here (not to the log, and not to
anything kept in the operator's memory, which a kill -9 would lose); the
harness writes what it did to the objects and which faults it caused. Each
line is written with one ``write()`` on a descriptor opened with ``O_APPEND``,
so lines from concurrent writers (and from successive operator processes)
never interleave, and a process killed mid-write loses at most its last line.
"""
import json
import os
import pathlib
import time
from collections.abc import Iterator
from typing import Any

Record = dict[str, Any]


def append(journal: pathlib.Path | str, /, **fields: Any) -> None:
    """Add one event, stamped with the wall-clock time and the writer's pid."""
    line = json.dumps({'ts': time.time(), 'pid': os.getpid(), **fields}, sort_keys=True) + '\n'
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read(path: pathlib.Path) -> list[Record]:
    """All complete events so far (a torn last line of a killed writer is skipped)."""
    return list(iter_from(path, 0)[0])


def iter_from(path: pathlib.Path, offset: int) -> tuple[Iterator[Record], int]:
    """The complete events after ``offset``, and the offset to continue from next time."""
    try:
        with path.open('rb') as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return iter(()), offset
    end = data.rfind(b'\n') + 1
    records = [_parse(line) for line in data[:end].splitlines()]
    return (record for record in records if record is not None), offset + end


def _parse(line: bytes) -> Record | None:
    try:
        record = json.loads(line)
    except ValueError:  # the partial line of a writer killed mid-write, followed by a newer line
        return None
    return record if isinstance(record, dict) else None
