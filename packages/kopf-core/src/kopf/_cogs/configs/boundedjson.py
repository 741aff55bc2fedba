"""
Parsing JSON that anyone who may patch an object can write, within bounds.

The framework's own records on the objects (e.g. the diff-base) are read back
with ``json.loads``. Whoever may patch an object may write anything there, and
``json.loads`` builds whatever the text describes: a few MiB of ``{},{},…``
become millions of dicts (hundreds of MiB, seconds on the event loop), and a
deep nesting raises ``RecursionError``. So the text's shape is measured first,
and the text is refused if it goes beyond :class:`Bounds`; only then is it
parsed. The measuring is a few passes over the bytes in C (counts, a translation,
a split by the quotes), a fraction of what the parsing itself costs.

The containers and the items are counted by their characters wherever they are,
in the strings too: it can only count more than there is, it needs no tokenizing,
and a real record stays below the bounds either way. The depth is exact
(the brackets in the strings are left out), since the strings could otherwise
hide the closing brackets and so a deep nesting.
"""
from __future__ import annotations

import array
import dataclasses
import itertools
import json
from typing import Any


@dataclasses.dataclass(frozen=True)
class Bounds:
    """How big a parsed text may be: its bytes, containers, items (values in containers), and nesting."""
    size: int  # bytes of UTF-8
    containers: int  # objects and arrays
    items: int  # the members and elements of all containers
    depth: int  # of containers in containers; the outermost one is at 1


class BoundExceededError(ValueError):
    """The text goes beyond the bounds: it is not parsed. The message says which bound and how."""


# Only the quotes and the brackets are kept to find the depth: the commas, letters, digits go.
_NOT_QUOTES_OR_BRACKETS = bytes(sorted(set(range(256)) - set(b'"[]{}')))
# The brackets as the depth's steps in a signed byte: +1 for the opening ones, -1 for the closing ones.
_DEPTH_STEPS = bytes.maketrans(b'[{]}', b'\x01\x01\xff\xff')


def loads(text: str, bounds: Bounds) -> Any:
    """
    Parse the text as ``json.loads`` does, if it is within the bounds.

    Raises :class:`BoundExceededError` if it is not, or if it is nested too deep
    for what is left of the stack here (``RecursionError`` never escapes);
    ``ValueError`` (as ``json.loads``) if it is not JSON.
    """
    check(text.encode('utf-8', 'surrogatepass'), bounds)
    try:
        return json.loads(text)
    except RecursionError:
        raise BoundExceededError("it is nested too deep to be parsed on the current stack") from None


def check(raw: bytes, bounds: Bounds) -> None:
    """Refuse the text (UTF-8) with :class:`BoundExceededError` if it goes beyond the bounds."""
    Tally(bounds).add(raw)
    depth = measure_depth(raw)  # its cost is bounded by the containers' count, checked by now
    if depth > bounds.depth:
        raise BoundExceededError(f"it is nested deeper than {bounds.depth:,} levels")


class Tally:
    """
    The size and the counts of a text, added up piece by piece: refused as soon as it goes beyond.

    So a text that comes in pieces (e.g. while it is being unpacked) is refused after its first
    excessive piece, not after all of it. The depth is not measured here (see :func:`check`).
    """

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.size = 0
        self.openings = 0
        self.closings = 0
        self.commas = 0

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        self.openings += piece.count(b'{') + piece.count(b'[')
        self.closings += piece.count(b'}') + piece.count(b']')
        self.commas += piece.count(b',')
        if self.size > self.bounds.size:
            raise BoundExceededError(f"it has more than {_format_size(self.bounds.size)}")
        # Each container has one opening and one closing bracket: counting both bounds the depth's measuring.
        if max(self.openings, self.closings) > self.bounds.containers:
            raise BoundExceededError(f"it has more than {self.bounds.containers:,} containers ({{}} and [])")
        # Every item but the first one of a container follows a comma.
        if self.commas + self.openings > self.bounds.items:
            raise BoundExceededError(f"it has more than {self.bounds.items:,} items in its containers")


def measure_depth(raw: bytes) -> int:
    """
    The deepest nesting of the containers in a JSON text (UTF-8), not counting the brackets in strings.

    The text need not be valid; if it is not, the result is only what it seems to be.
    The cost is a few passes in C over the text, plus a step per quote and bracket.
    """
    # No quote is left inside the strings: the escaped backslashes go first, then the escaped quotes.
    unescaped = raw.replace(b'\\\\', b'').replace(b'\\"', b'')
    marks = unescaped.translate(None, _NOT_QUOTES_OR_BRACKETS)
    # Two adjacent quotes end a string and start the next one, or enclose a string without brackets:
    # either way, each bracket keeps its side (in a string or not). The few quotes left enclose the
    # strings with brackets (rare in real records): every other piece between them is in a string.
    marks = marks.replace(b'""', b'')
    brackets = b''.join(marks.split(b'"')[::2])
    steps = array.array('b', brackets.translate(_DEPTH_STEPS))
    return max(itertools.accumulate(steps), default=0)


def _format_size(size: int) -> str:
    return f'{size // 1024 // 1024} MiB' if size % (1024 * 1024) == 0 else f'{size:,} bytes'
