"""
Shard selectors: which objects a ``shardRange(...)`` selector keeps, as the API server decides it.

Kubernetes 1.36+ (with the ``ShardedListAndWatch`` feature gate) filters lists
and watches by a ``shardSelector`` query parameter such as::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')

An object belongs to the range if the 64-bit FNV-1a hash of the UTF-8 bytes of
the field's value (``object.metadata.uid`` or ``object.metadata.namespace``)
is within ``[start, end)``. Several ranges of the same field can be joined with
``||``. The bounds are exactly 16 hex digits after ``0x``, lowercase, except
the end of the hash space, ``0x10000000000000000`` (2**64).

A server without the feature ignores the parameter (its list responses then
have no ``metadata.shardInfo``): the framework then filters on its own side
with this module, so that both ways split the objects the same way. (1.37.2
with the gate filters custom resources without echoing ``shardInfo``: they are
checked again here, and nothing more is dropped.)
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping, Optional, Tuple

HASH_SPACE = 1 << 64  # the exclusive end of the last range
FIELDS = ('object.metadata.uid', 'object.metadata.namespace')

_FNV64_OFFSET_BASIS = 0xcbf29ce484222325
_FNV64_PRIME = 0x100000001b3
_MASK64 = HASH_SPACE - 1

_RANGE = re.compile(r'''
    \s* shardRange \s* \( \s*
    (?P<field> [A-Za-z_][\w.]* ) \s* , \s*
    (?P<q1>['"]) (?P<start> [^'"]* ) (?P=q1) \s* , \s*
    (?P<q2>['"]) (?P<end> [^'"]* ) (?P=q2) \s*
    \) \s*
''', re.VERBOSE)
_BOUND = re.compile(r'0x(?:[0-9a-f]{16}|10000000000000000)')


class ShardSelectorError(ValueError):
    """A shard selector that the framework cannot interpret (and the API server would refuse)."""


def fnv1a64(data: bytes) -> int:
    """The 64-bit FNV-1a hash of the bytes."""
    value = _FNV64_OFFSET_BASIS
    for byte in data:
        value = ((value ^ byte) * _FNV64_PRIME) & _MASK64
    return value


def hash_value(value: str) -> int:
    """The shard hash of a field's value: FNV-1a 64 of its UTF-8 bytes."""
    return fnv1a64(value.encode('utf-8'))


@dataclasses.dataclass(frozen=True)
class ShardRange:
    """One ``shardRange(field, start, end)``: the hashes ``start <= hash < end`` of the field's values."""
    field: str
    start: int
    end: int

    def __contains__(self, value: str) -> bool:
        return self.start <= hash_value(value) < self.end


@dataclasses.dataclass(frozen=True)
class ShardSelector:
    """Ranges of one field joined by ``||``: an object matches if its hash is in any of them."""
    field: str
    ranges: Tuple[ShardRange, ...]

    def matches(self, body: Mapping[str, Any]) -> bool:
        value = field_value(body, self.field)
        return any(value in shard_range for shard_range in self.ranges)


def field_value(body: Mapping[str, Any], field: str) -> str:
    """The value hashed for the field: absent values are empty strings, as for the API server."""
    metadata = body.get('metadata') or {}
    key = field.rsplit('.', 1)[-1]
    return str(metadata.get(key) or '')


def parse(selector: str) -> ShardSelector:
    """
    Parse ``shardRange(field, 'start', 'end') [|| shardRange(...)]``.

    Raises :class:`ShardSelectorError` that says what is wrong and what is expected.
    """
    ranges = tuple(_parse_range(part, selector) for part in selector.split('||'))
    fields = {shard_range.field for shard_range in ranges}
    if len(fields) > 1:
        raise ShardSelectorError(f"All ranges of a shard selector must hash the same field, "
                                 f"got {', '.join(sorted(fields))}: {selector!r}")
    return ShardSelector(field=ranges[0].field, ranges=ranges)


def _parse_range(text: str, selector: str) -> ShardRange:
    match = _RANGE.fullmatch(text)
    if match is None:
        raise ShardSelectorError(f"A shard selector must be shardRange(object.metadata.uid, '0x<16 hex digits>', "
                                 f"'0x<16 hex digits>'), optionally several joined with ||; got {selector!r}")
    field = match.group('field')
    if field not in FIELDS:
        raise ShardSelectorError(f"A shard selector can hash only {' or '.join(FIELDS)}, not {field!r}: {selector!r}")
    start, end = _parse_bound(match.group('start'), selector), _parse_bound(match.group('end'), selector)
    if not start < end:
        raise ShardSelectorError(f"A shard range must start below its end: {text.strip()!r}")
    return ShardRange(field=field, start=start, end=end)


def _parse_bound(text: str, selector: str) -> int:
    if _BOUND.fullmatch(text) is None:
        hint = _padded(text)
        suggestion = f" (did you mean {hint!r}?)" if hint else ""
        raise ShardSelectorError(f"A shard range's bound must be '0x' and 16 lowercase hex digits "
                                 f"(or '0x10000000000000000' for the end), not {text!r}{suggestion}: {selector!r}")
    return int(text, 16)


def _padded(text: str) -> Optional[str]:
    digits = text[2:] if text.lower().startswith('0x') else ''
    if digits and len(digits) < 16 and all(char in '0123456789abcdefABCDEF' for char in digits):
        return '0x' + digits.lower().rjust(16, '0')
    return None


def format_range(field: str, start: int, end: int) -> str:
    """A ``shardRange(...)`` selector with the bounds zero-padded as the API server requires."""
    return f"shardRange({field}, '{_format_bound(start)}', '{_format_bound(end)}')"


def _format_bound(value: int) -> str:
    if not 0 <= value <= HASH_SPACE:
        raise ValueError(f"A shard bound must be within 0..2**64, not {value}.")
    return f'0x{value:016x}'
