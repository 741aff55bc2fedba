"""
A list response whose items are decoded one by one as they are taken, not all at once.

Without pagination (``settings.watching.chunk_size=None``, Kopf's default),
the initial listing of a resource is one response with all its objects.
Parsed at once, every object would be in memory as dicts at the same moment,
several times the size of the response's text, for as long as the listing is
processed. Here the text is kept, and each item is decoded when it is
iterated over: an item lives only as long as its consumer holds it.

The result is a full :class:`~typing.Sequence`: iterating decodes lazily (and
anew on every iteration); ``len()`` and indexing decode all items once.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, Generator, Iterator, List, Optional, Sequence, Tuple, Union, overload

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r'[ \t\n\r]*')


class Listing:
    """A decoded list response: its top-level fields but the items, and the items (decoded as taken)."""

    def __init__(self, head: Dict[str, Any], items: Sequence[Any]) -> None:
        self.head = head
        self.items = items

    def map(self, convert: Callable[[Any], Any]) -> Sequence[Any]:
        """The items converted one by one (as they are decoded, if they are decoded as taken)."""
        if isinstance(self.items, LazyItems):
            return self.items.mapped(convert)
        return [convert(item) for item in self.items]


class LazyItems(Sequence[Any]):
    """
    The items of a list response's text, decoded when iterated over (anew on every iteration).

    The fields after the items, if any, are decoded into the head at the end of an iteration.
    """

    def __init__(self, text: str, start: int, head: Dict[str, Any],
                 convert: Optional[Callable[[Any], Any]] = None) -> None:
        self._text = text
        self._start = start  # right after the array's opening bracket
        self._head = head
        self._convert = convert
        self._decoded: Optional[List[Any]] = None

    def mapped(self, convert: Callable[[Any], Any]) -> LazyItems:
        """The same items, each converted after it is decoded."""
        return LazyItems(self._text, self._start, self._head, convert)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._decoded) if self._decoded is not None else self._decode()

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: Union[int, slice]) -> Any:
        return self._all()[index]

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or to lazy items) of equal items, as the list of the items would be."""
        if isinstance(other, LazyItems):
            return self._all() == other._all()
        if isinstance(other, list):
            return self._all() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable as a list is

    def __repr__(self) -> str:
        return f'<{type(self).__name__} of a list response of {len(self._text)} characters>'

    def _all(self) -> List[Any]:
        if self._decoded is None:
            self._decoded = list(self._decode())
        return self._decoded

    def _decode(self) -> Iterator[Any]:
        items = _iter_array(self._text, self._start)
        end = yield from (items if self._convert is None else _converted(items, self._convert))
        _decode_fields(self._text, end, into=self._head)


def decode_listing(raw: bytes) -> Listing:
    """
    Decode a list response: its items lazily if they come after the list's metadata.

    The API server always sends the metadata first. If a response does not
    (its metadata after the items), it is decoded at once as a whole, so the
    result is the same either way. Malformed JSON fails here, or, within and
    after the items, when they are iterated over.
    """
    text = raw.decode('utf-8')
    pos = _skip(text, 0)
    if not text.startswith('{', pos):
        raise json.JSONDecodeError("A list response is not a JSON object", text, pos)
    head: Dict[str, Any] = {}
    pos = _skip(text, pos + 1)
    if not text.startswith('}', pos):
        while True:
            key, pos = _decode_key(text, pos)
            if key == 'items' and 'metadata' in head and text.startswith('[', pos):
                return Listing(head, LazyItems(text, pos + 1, head))
            head[key], pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, pos)
            if text.startswith('}', pos):
                break
            pos = _skip(text, _expect(text, pos, ','))
    _expect_end(text, pos + 1)
    return Listing(head, head.pop('items', None) or [])


def _converted(items: Generator[Any, None, int], convert: Callable[[Any], Any]) -> Generator[Any, None, int]:
    """The items converted one by one, and the generator's result as it is."""
    while True:
        try:
            item = next(items)
        except StopIteration as stop:
            end: int = stop.value
            return end
        yield convert(item)


def _iter_array(text: str, pos: int) -> Generator[Any, None, int]:
    """Decode an array's items from right after its opening bracket; return the offset after it."""
    pos = _skip(text, pos)
    if text.startswith(']', pos):
        return pos + 1
    while True:
        item, pos = _DECODER.raw_decode(text, pos)
        yield item
        pos = _skip(text, pos)
        if text.startswith(']', pos):
            return pos + 1
        pos = _skip(text, _expect(text, pos, ','))


def _decode_fields(text: str, pos: int, *, into: Dict[str, Any]) -> None:
    """Decode the rest of an object's fields after a value, up to the end of the text."""
    pos = _skip(text, pos)
    while not text.startswith('}', pos):
        key, pos = _decode_key(text, _skip(text, _expect(text, pos, ',')))
        into[key], pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
    _expect_end(text, pos + 1)


def _decode_key(text: str, pos: int) -> Tuple[str, int]:
    """A field's name and the offset of its value."""
    if not text.startswith('"', pos):
        raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
    key, pos = _DECODER.raw_decode(text, pos)
    return key, _skip(text, _expect(text, _skip(text, pos), ':'))


def _expect(text: str, pos: int, char: str) -> int:
    if not text.startswith(char, pos):
        raise json.JSONDecodeError(f"Expecting {char!r} delimiter", text, pos)
    return pos + 1


def _expect_end(text: str, pos: int) -> None:
    if _skip(text, pos) != len(text):
        raise json.JSONDecodeError("Extra data", text, _skip(text, pos))


def _skip(text: str, pos: int) -> int:
    """The offset of the next non-whitespace character (JSON's whitespace only)."""
    match = _SPACE.match(text, pos)
    return match.end() if match is not None else pos
