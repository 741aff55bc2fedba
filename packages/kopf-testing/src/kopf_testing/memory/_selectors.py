"""
Label and field selectors, parsed and matched as the API server does.

Labels: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``,
``!k``, comma-separated (all must match). Fields: ``metadata.name`` and
``metadata.namespace`` with ``=``, ``==``, ``!=`` (what every resource supports);
other fields differ per resource in the real API server, so they are refused.
Shards: ``shardRange(object.metadata.uid|namespace, '0x…', '0x…')``, ``||``-joined,
as Kubernetes 1.36+ applies them with the ``ShardedListAndWatch`` feature gate.
"""
import re
from collections.abc import Callable, Mapping
from typing import Any, Optional

from kopf_testing.memory._errors import fail, unsupported

Matcher = Callable[[Mapping[str, Any]], bool]

_SET_REQUIREMENT = re.compile(r'^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$')
_EQUALITY = re.compile(r'^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$')
_EXISTENCE = re.compile(r'^\s*(!?)\s*([^\s!=(),]+)\s*$')
_FIELDS = {'metadata.name': ('metadata', 'name'), 'metadata.namespace': ('metadata', 'namespace')}
_SHARD_RANGE = re.compile(r"shardRange\(\s*([\w.]+)\s*,\s*'(0x[0-9a-f]+)'\s*,\s*'(0x[0-9a-f]+)'\s*\)")
_SHARD_FIELDS = {'object.metadata.uid': 'uid', 'object.metadata.namespace': 'namespace'}


def parse_label_selector(selector: Optional[str]) -> Matcher:
    checks = [_parse_label_requirement(part) for part in _split(selector or '')]
    return lambda obj: all(check(obj.get('metadata', {}).get('labels') or {}) for check in checks)


def parse_field_selector(selector: Optional[str]) -> Matcher:
    checks = [_parse_field_requirement(part) for part in _split(selector or '')]
    return lambda obj: all(check(obj) for check in checks)


def parse_shard_selector(selector: Optional[str]) -> Matcher:
    """
    A ``shardRange(...)`` selector, as an API server with sharded lists and watches applies it.

    This is the server's side, written apart from the operator's own filtering
    (``kopf``'s shards), so that the two are checked against each other.
    """
    if not selector:
        return lambda obj: True
    ranges = [_parse_shard_range(part) for part in selector.split('||')]
    if len({field for field, _, _ in ranges}) > 1:
        fail(400, f'invalid shard selector: all shard ranges must use the same field: {selector!r}')
    field = ranges[0][0]
    return lambda obj: any(start <= _fnv1a64(_shard_key(obj, field)) < end for _, start, end in ranges)


def _parse_shard_range(text: str) -> tuple[str, int, int]:
    match = _SHARD_RANGE.fullmatch(text.strip())
    if match is None:
        fail(400, f'invalid shard selector: expected shardRange(field, \'0x...\', \'0x...\'), got {text.strip()!r}')
    field, start, end = match.groups()
    if field not in _SHARD_FIELDS:
        fail(400, f'invalid shard selector: unsupported field path {field!r}')
    for bound in (start, end):
        if len(bound) != 18 and bound != '0x10000000000000000':
            fail(400, f'invalid shard selector: {bound!r} must be a 0x-prefixed 16-digit hex value')
    if int(start, 16) >= int(end, 16):
        fail(400, f'invalid shard selector: shard range start {start} must be less than end {end}')
    return field, int(start, 16), int(end, 16)


def _shard_key(obj: Mapping[str, Any], field: str) -> bytes:
    return str(obj.get('metadata', {}).get(_SHARD_FIELDS[field]) or '').encode()


def _fnv1a64(data: bytes) -> int:
    value = 0xcbf29ce484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001b3) % (1 << 64)
    return value


def select(*matchers: Matcher) -> Matcher:
    """All the matchers together ("and")."""
    return lambda obj: all(matcher(obj) for matcher in matchers)


def _split(selector: str) -> list[str]:
    """Split by commas outside of parentheses."""
    parts, depth, current = [], 0, ''
    for char in selector:
        depth += (char == '(') - (char == ')')
        if char == ',' and depth == 0:
            parts.append(current)
            current = ''
        else:
            current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def _parse_label_requirement(text: str) -> Callable[[Mapping[str, str]], bool]:
    if match := _SET_REQUIREMENT.match(text):
        key, op, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(',') if v.strip()}
        if op == 'in':
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQUALITY.match(text):
        key, op, value = match.groups()
        if op == '!=':
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTENCE.match(text):
        negated, key = match.group(1) == '!', match.group(2)
        return lambda labels: (key in labels) != negated
    fail(400, f'unable to parse requirement: {text!r}')


def _parse_field_requirement(text: str) -> Matcher:
    match = _EQUALITY.match(text)
    if match is None:
        fail(400, f'invalid field selector: {text!r}')
    field, op, value = match.groups()
    if field not in _FIELDS:
        unsupported(f'the field selector {field!r} (only {", ".join(_FIELDS)})')
    section, key = _FIELDS[field]
    if op == '!=':
        return lambda obj: obj.get(section, {}).get(key, '') != value
    return lambda obj: obj.get(section, {}).get(key, '') == value
