"""
Parsing the admission reviews without stalling the operator's event loop.

A review of several MiB takes ``json.loads`` a tenth of a second or more, all of
it on the event loop: while it parses, the operator's other tasks (watch-streams,
handlers, other reviews) wait. A worker thread does not help: the C parser holds
the GIL for the whole document, so the loop waits all the same (and several
threads make it worse). So large bodies are parsed on the loop itself, in slices
of a few milliseconds, between which the loop runs its other tasks:

* the structure is walked with an explicit stack (no recursion), which also
  limits the nesting exactly: a body nested deeper than :data:`MAX_DEPTH` is a
  :class:`NestingTooDeepError` (a ``ValueError``), not a ``RecursionError``;
* runs of sibling members are given to the C parser together, wrapped into a
  synthetic container and cut at a comma, each run small enough (a few KiB) to
  parse in well under a millisecond; a run is accepted only if the C parser
  consumes it exactly, so the result is the same as ``json.loads`` gives,
  and so are the documents refused (except the too deep ones);
* the C parser's own recursion never goes deeper than :data:`C_DEPTH`: a run is
  given to it only if it has no more opening brackets than that (a count, in C).

Small bodies (the usual case) are parsed with ``json.loads`` at once.
Only one large body is parsed at a time per server, so the lag added to the
loop is one slice, however many large reviews arrive together.
"""
from __future__ import annotations

import asyncio
import json
import json.decoder
import json.scanner
import re
import sys
import time
from typing import Any, Callable, Dict, Generator, List, Optional, Tuple, Union, cast

# Deeper than any Kubernetes object (a CRD's schema is a few dozen levels), about as deep as Kopf's
# json.loads on the event loop's stack goes before its RecursionError.
MAX_DEPTH = 1000

# The deepest nesting given to the C parser at once: well below the recursion limit, wherever it runs
# (at most half of it, if the process lowers the limit).
C_DEPTH = 400

# Bodies up to this size with few brackets are parsed at once: a millisecond or two on the loop.
INLINE_SIZE = 64 * 1024

# How long the parser runs before it lets the loop run other tasks.
SLICE_DURATION = 0.005

# How much text at most goes to the C parser at once, and how many cuts (commas) are tried in it.
_RUN_SIZE = 16 * 1024
_RUN_MIN_SIZE = 256
_RUN_CUTS = 4

_WHITESPACE = re.compile(r'[ \t\n\r]*')
_DECODER = json.JSONDecoder()  # strict, as json.loads
# The parsers that json.loads uses (C ones, if available); typeshed knows them only partially.
_scan_once: Callable[[str, int], Tuple[Any, int]] = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]
_scanstring: Callable[[str, int, bool], Tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

Container = Union[Dict[str, Any], List[Any]]


class NestingTooDeepError(ValueError):
    """The JSON document is nested deeper than :data:`MAX_DEPTH` levels."""

    def __init__(self, depth: int) -> None:
        super().__init__(f"nested deeper than {depth} levels")


class JsonParser:
    """
    Parses the request bodies of one server: small ones at once, large ones in slices.

    The same results and the same refusals as ``json.loads``: ``ValueError``
    (incl. ``json.JSONDecodeError`` and ``UnicodeDecodeError``) for what is not
    JSON, plus :class:`NestingTooDeepError` for the nesting beyond :data:`MAX_DEPTH`.
    """

    def __init__(self) -> None:
        self._large = asyncio.Lock()  # one large body at a time: the lag is one slice, not one per body

    @property
    def slicing(self) -> asyncio.Lock:
        """Held while a large body is parsed: whatever else works in slices takes turns with it."""
        return self._large

    @staticmethod
    def is_large(raw: bytes) -> bool:
        """Whether the body is parsed in slices (and so is to be freed in slices too)."""
        return len(raw) > INLINE_SIZE or raw.count(b'[') + raw.count(b'{') > C_DEPTH

    async def parse(self, raw: bytes) -> Any:
        if not self.is_large(raw):
            return json.loads(raw)
        async with self._large:
            text = raw.decode(json.detect_encoding(raw), 'surrogatepass')  # as json.loads does
            await asyncio.sleep(0)  # a few milliseconds for several MiB: a slice of its own
            steps = parse_in_slices(text)
            while True:
                try:
                    next(steps)
                except StopIteration as e:
                    return e.value
                await asyncio.sleep(0)


class _Frame:
    """A container being filled: its members come one by one or in runs."""
    __slots__ = ('closer', 'container', 'key', 'member_start', 'run_size', 'runs', 'separator')

    def __init__(self, container: Container, closer: str) -> None:
        self.container = container
        self.closer = closer
        self.key: Optional[str] = None  # of the member being parsed, in objects
        self.runs = True  # whether to try runs of members; off after a failed run, until a small member
        self.member_start = 0
        # Where to cut the runs: after the same character as the last member ended with, if known
        # (e.g. "}," between objects), which cuts between the members far more often than any comma.
        self.separator = ','
        self.run_size = _RUN_SIZE  # how much text to try: as much as has few enough brackets


def parse_in_slices(text: str, *, slice_duration: float = SLICE_DURATION) -> Generator[None, None, Any]:
    """
    Parse a JSON document, yielding every ``slice_duration`` seconds; the value is returned at the end.

    The caller lets the loop run between the steps, e.g.::

        steps = parse_in_slices(text)
        while True:
            try:
                next(steps)
            except StopIteration as e:
                return e.value
            await asyncio.sleep(0)
    """
    stack: List[_Frame] = []
    keys: Dict[str, str] = {}  # the same key strings for all objects, as json.loads does
    pos = _skip(text, 0)
    value: Any = None
    step = _VALUE
    deadline = time.perf_counter() + slice_duration
    while True:
        if time.perf_counter() >= deadline:
            yield
            deadline = time.perf_counter() + slice_duration

        # Each step is a value or a few members (a run in C); the characters are never walked one by one here.
        if step == _VALUE:
            pos, value, step = _parse_value(text, pos, stack)
        else:
            pos, value, step = _parse_members(text, pos, stack, keys)
        if step == _COMPLETE:
            pos, value, step = _attach_value(text, pos, value, stack)
            if step == _COMPLETE:
                return value


# What is at the position after a step of the parsing: a value, the next member(s) of the innermost
# container (a key or a run of members), or nothing more: a value is complete (the document, if the last).
_VALUE = 0
_MEMBERS = 1
_COMPLETE = 2


def _parse_value(text: str, pos: int, stack: List[_Frame]) -> Tuple[int, Any, int]:
    """Parse a scalar or an empty container at once, or open a non-empty container for its members."""
    char = text[pos:pos + 1]
    if char != '{' and char != '[':
        try:
            value, pos = _scan_once(text, pos)
        except StopIteration as e:
            raise json.JSONDecodeError("Expecting value", text, e.value) from None
        return pos, value, _COMPLETE
    if len(stack) >= MAX_DEPTH:
        raise NestingTooDeepError(MAX_DEPTH)
    frame = _Frame({}, '}') if char == '{' else _Frame([], ']')
    pos = _skip(text, pos + 1)
    if text[pos:pos + 1] != frame.closer:
        stack.append(frame)
        return pos, None, _MEMBERS
    return pos + 1, frame.container, _COMPLETE  # empty


def _parse_members(text: str, pos: int, stack: List[_Frame], keys: Dict[str, str]) -> Tuple[int, Any, int]:
    """Parse a run of the innermost container's members in C if it can be cut, else start one member."""
    frame = stack[-1]
    if text[pos:pos + 1] == frame.closer:  # right after a comma
        raise json.JSONDecodeError("Expecting value" if frame.closer == ']' else
                                   "Expecting property name enclosed in double quotes", text, pos)
    if frame.runs:
        budget = min(MAX_DEPTH - len(stack), C_DEPTH, sys.getrecursionlimit() // 2)
        ran = _parse_run(text, pos, frame, budget=budget)
        if ran is not None:
            pos, closed = ran
            if not closed:
                return pos, None, _MEMBERS  # at the next member
            stack.pop()
            return pos, frame.container, _COMPLETE  # a value of its parent
        frame.runs = False
    frame.member_start = pos
    if frame.closer == '}':
        frame.key, pos = _parse_key(text, pos, keys)
    return pos, None, _VALUE


def _attach_value(text: str, pos: int, value: Any, stack: List[_Frame]) -> Tuple[int, Any, int]:
    """
    Attach a complete value to its container; close the containers that end after it.

    Returns the position of the next member (after a comma), or the document's value
    if there is no container left (and nothing but whitespace after it).
    """
    skip = _skip
    while stack:
        frame = stack[-1]
        container = frame.container
        if isinstance(container, list):
            container.append(value)
        else:
            container[cast(str, frame.key)] = value  # an object's member: its key comes before its value
            frame.key = None
        if not frame.runs and pos - frame.member_start <= _RUN_SIZE // 8:
            frame.runs = True  # small members again: try them in runs
        pos = skip(text, pos)
        char = text[pos:pos + 1]
        if char == ',':
            frame.separator = _get_separator(text, pos)
            return skip(text, pos + 1), None, _MEMBERS
        if char != frame.closer:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
        stack.pop()
        value = frame.container
        pos += 1
    pos = skip(text, pos)
    if pos != len(text):
        raise json.JSONDecodeError("Extra data", text, pos)
    return pos, value, _COMPLETE


def _parse_run(text: str, pos: int, frame: _Frame, *, budget: int) -> Optional[Tuple[int, bool]]:
    """
    Parse a run of the container's members at once, in C; or none if it cannot be cut.

    The text from ``pos`` (the start of a member) to a comma is wrapped into
    the container's brackets. If it parses exactly up to the added closing bracket,
    the cut was between two members: they are all in, the next member is after
    the comma. If it parses up to an earlier closing bracket, that is the
    container's own end: all its remaining members are in, and it is complete.
    Otherwise, the cut was inside a member: an earlier comma is tried.

    Returns the position after the run and whether the container is complete.
    """
    end = len(text)
    size = frame.run_size
    limit = min(pos + size, end)
    brackets = text.count('[', pos, limit) + text.count('{', pos, limit)
    if brackets > budget:  # too many containers in it to be sure of the depth: take less text
        size = max(_RUN_MIN_SIZE, size * budget // brackets * 3 // 4)
        limit = min(pos + size, end)
        brackets = text.count('[', pos, limit) + text.count('{', pos, limit)
        if brackets > budget:
            return None
    elif brackets < budget // 2 and size < _RUN_SIZE:
        size *= 2  # for the next run: there is room for more
    frame.run_size = size

    opener = '{' if frame.closer == '}' else '['
    separator = frame.separator
    cut = limit if limit == end else _find_cut(text, separator, pos, limit)
    for _ in range(_RUN_CUTS):
        if cut <= pos:
            return None
        wrapped = opener + text[pos:cut] + frame.closer
        try:
            members, used = _scan_once(wrapped, 0)
        except (StopIteration, ValueError, RecursionError):
            cut = _find_cut(text, separator, pos, cut)
            continue
        if used < len(wrapped):  # the container's own closing bracket: it ends here
            _merge(frame.container, members)
            return pos + used - 1, True
        if cut < end:  # the added bracket: the cut was between the members
            _merge(frame.container, members)
            frame.separator = _get_separator(text, cut)
            return _skip(text, cut + 1), False
        return None  # the text ends inside the container: let the member-by-member parsing say where
    return None


def _find_cut(text: str, separator: str, start: int, end: int) -> int:
    """The position of the last comma of the separator between start and end, or -1."""
    index = text.rfind(separator, start, end)
    return index + len(separator) - 1 if index >= 0 else -1


def _get_separator(text: str, comma: int) -> str:
    """The comma with the character before it, unless that is whitespace (then, any comma)."""
    before = text[comma - 1:comma]
    return ',' if not before or before in ' \t\n\r' else before + ','


def _merge(container: Container, members: Container) -> None:
    if isinstance(container, dict):
        container.update(members)
    else:
        container.extend(members)


def _skip(text: str, pos: int) -> int:
    """The position after the whitespace at the position (if any)."""
    match = _WHITESPACE.match(text, pos)
    return match.end() if match is not None else pos


def _parse_key(text: str, pos: int, keys: Dict[str, str]) -> Tuple[str, int]:
    if text[pos:pos + 1] != '"':
        raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
    key, pos = _scanstring(text, pos + 1, True)
    key = keys.setdefault(key, key)
    pos = _skip(text, pos)
    if text[pos:pos + 1] != ':':
        raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
    return key, _skip(text, pos + 1)
