"""
A list response read in chunks, its items kept as their texts and decoded one by one as they are taken.

Without pagination (``settings.watching.chunk_size=None``, Kopf's default),
the initial listing of a resource is one response with all its objects. Read
whole and parsed at once, it would be in memory several times over: as the
received chunks, as the joined body, and as every object's dicts, which take
several times the size of their text. Here the response is read in chunks;
each item's text is cut out as soon as it is complete, the chunks are dropped
as they go, and an item is decoded only when it is iterated over: it lives
only as long as its consumer holds it.

The items are a full :class:`~typing.Sequence`: iterating and indexing decode
(anew every time), ``len()`` does not.
"""
from __future__ import annotations

import codecs
import json
import re
from typing import Any, Callable, Dict, Generator, Iterator, List, Optional, Sequence, Union, overload

import aiohttp

from kopf_client import _jsons

_CHUNK_SIZE = 64 * 1024
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r'[ \t\n\r]*')

Convert = Callable[[Any], Any]
Waiting = Generator[None, None, Any]  # a parsing step that may wait for more text (``yield``)


class Listing:
    """A list response: its top-level fields but the items, and the items (decoded as taken)."""

    def __init__(self, head: Dict[str, Any], items: LazyItems) -> None:
        self.head = head
        self.items = items

    def map(self, convert: Convert) -> LazyItems:
        """The items, each converted after it is decoded."""
        return LazyItems(self.items.texts, convert)


class LazyItems(Sequence[Any]):
    """The items of a list response as their texts, decoded (and converted) when taken."""

    def __init__(self, texts: Sequence[str], convert: Optional[Convert] = None) -> None:
        self.texts = texts
        self._convert = convert

    def __iter__(self) -> Iterator[Any]:
        return map(self._decode, self.texts)

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> LazyItems: ...
    def __getitem__(self, index: Union[int, slice]) -> Any:
        if isinstance(index, slice):
            return LazyItems(self.texts[index], self._convert)
        return self._decode(self.texts[index])

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or to lazy items) of equal items, as the list of the items would be."""
        if isinstance(other, (LazyItems, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list's

    def __repr__(self) -> str:
        return f'<{type(self).__name__}: {len(self.texts)} items of a list response>'

    def _decode(self, text: str) -> Any:
        item = _jsons.loads(text)
        return item if self._convert is None else self._convert(item)


async def read_listing(response: aiohttp.ClientResponse) -> Optional[Listing]:
    """Read a list response in chunks; ``None`` if its body is empty. Malformed JSON raises ``ValueError``."""
    splitter = Splitter()
    decoder = codecs.getincrementaldecoder('utf-8')()
    async for chunk in response.content.iter_chunked(_CHUNK_SIZE):
        splitter.feed(decoder.decode(chunk))
    return splitter.finish(decoder.decode(b'', final=True))


def decode_listing(text: str) -> Optional[Listing]:
    """A list response's whole text (e.g. in tests): the same as if it came in chunks."""
    return Splitter().finish(text)


class Splitter:
    """
    Parse a list response's text fed in parts: the top-level fields, and the items' texts.

    The parsing is a generator that waits (``yield``) where the text fed so far
    ends within a value; only the text from that value's start is kept.
    A value is tried again only when its available text has doubled, so that a
    large item coming in many small parts is not parsed over and over.
    """

    def __init__(self) -> None:
        self.head: Dict[str, Any] = {}
        self.texts: List[str] = []
        self._text = ''
        self._keep = 0  # where the text still needed starts (the value being waited for)
        self._final = False
        self._empty = True  # nothing but whitespace so far
        self._parsing = self._parse()
        next(self._parsing)

    def feed(self, text: str) -> None:
        self._empty = self._empty and (not text or text.isspace())
        self._text = self._text[self._keep:] + text
        self._keep = 0
        try:
            self._parsing.send(None)
        except StopIteration:
            pass

    def finish(self, text: str = '') -> Optional[Listing]:
        """The listing from all the text fed (``None`` if it is empty); it raises if incomplete or malformed."""
        self._final = True
        if self._empty and (not text or text.isspace()):
            return None
        self.feed(text)
        return Listing(self.head, LazyItems(self.texts))

    def _parse(self) -> Waiting:
        yield  # until the first text
        pos = yield from self._expect(0, '{')
        pos = yield from self._next(pos)
        if self._text[pos] != '}':
            while True:
                pos = yield from self._field(pos)
                pos = yield from self._next(pos)
                if self._text[pos] == '}':
                    break
                pos = yield from self._expect(pos, ',')
        yield from self._end(pos + 1)

    def _field(self, pos: int) -> Waiting:
        """One top-level field: the items' texts, or any other field's value into the head."""
        pos = yield from self._next(pos)
        if self._text[pos] != '"':
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", self._text, pos)
        key, _, pos = yield from self._value(pos)
        pos = yield from self._expect(pos, ':')
        pos = yield from self._next(pos)
        if key == 'items' and self._text[pos] == '[':
            return (yield from self._items(pos + 1))
        self.head[key], _, pos = yield from self._value(pos)
        return pos

    def _items(self, pos: int) -> Waiting:
        """The items' texts, from right after the array's opening bracket; the offset after it."""
        pos = yield from self._next(pos)
        if self._text[pos] == ']':
            return pos + 1
        while True:
            _, start, pos = yield from self._value(pos)
            self.texts.append(self._text[start:pos])
            pos = yield from self._next(pos)
            if self._text[pos] == ']':
                return pos + 1
            pos = yield from self._expect(pos, ',')

    def _value(self, pos: int) -> Waiting:
        """A value at the next non-whitespace: ``(value, start, end)``."""
        pos = yield from self._next(pos)
        tried = 0  # the text available at the last attempt
        while True:
            if self._final or len(self._text) - pos >= 2 * tried:
                try:
                    value, end = _DECODER.raw_decode(self._text, pos)
                except json.JSONDecodeError:
                    if self._final:
                        raise
                else:
                    # A number (or a literal) at the end of the text so far may go on in the next part.
                    if self._final or end < len(self._text) or self._text[end - 1] in '"]}':
                        return value, pos, end
                tried = len(self._text) - pos
            pos = yield from self._wait(pos)

    def _next(self, pos: int) -> Waiting:
        """The offset of the next non-whitespace character."""
        pos = yield from self._skip_space(pos)
        if pos == len(self._text):
            raise json.JSONDecodeError("Unexpected end of a list response", self._text, pos)
        return pos

    def _expect(self, pos: int, char: str) -> Waiting:
        pos = yield from self._next(pos)
        if self._text[pos] != char:
            raise json.JSONDecodeError(f"Expecting {char!r}", self._text, pos)
        return pos + 1

    def _end(self, pos: int) -> Waiting:
        """Nothing but whitespace after the response's object."""
        pos = yield from self._skip_space(pos)
        if pos < len(self._text):
            raise json.JSONDecodeError("Extra data", self._text, pos)

    def _skip_space(self, pos: int) -> Waiting:
        """The offset after the whitespace from ``pos``: of a character, or the end once all text is fed."""
        while True:
            match = _SPACE.match(self._text, pos)
            pos = match.end() if match is not None else pos
            if pos < len(self._text) or self._final:
                return pos
            pos = yield from self._wait(pos)

    def _wait(self, pos: int) -> Generator[None, None, int]:
        """Wait for more text; the text from ``pos`` on is kept, so ``pos`` is then the start (0)."""
        self._keep = pos
        yield
        return 0
