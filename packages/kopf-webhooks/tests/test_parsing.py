"""
Parsing the reviews in slices: the same results and refusals as ``json.loads``, an exact depth limit.

The parser's machinery (runs of members given to the C parser, cut at commas,
limited by the brackets they contain) is exercised with the real limits and
with tiny ones, on seeded random documents, valid and mutated: whatever
``json.loads`` accepts is parsed to the same value, whatever it refuses is refused.
"""
from __future__ import annotations

import asyncio
import json
import math
import random
import time
from typing import Any, Iterator, Tuple

import pytest

from kopf_webhooks import _parsing
from kopf_webhooks._parsing import MAX_DEPTH, JsonParser, NestingTooDeepError, parse_in_slices


def parse(text: str, **kwargs: Any) -> Any:
    steps = parse_in_slices(text, **kwargs)
    while True:
        try:
            next(steps)
        except StopIteration as e:
            return e.value


def count_slices(text: str, **kwargs: Any) -> int:
    steps = parse_in_slices(text, **kwargs)
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration:
            return count
        count += 1


def depth_of(value: Any) -> int:
    """The nesting of containers in the value (without recursion: the values can be deep)."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


SCALARS = [0, -1, 12345678901234567890, 1.5, -2e-05, True, False, None,
           '', 'a,b]}', 'q"uo\\te', '\u00fcn\u00ef', 'x' * 300, '},{', '],[']
KEYS = ['a', 'b', 'k,}', '', 'key' * 10, '"]', 'ü']


def random_value(rnd: random.Random, depth: int = 0) -> Any:
    kind = rnd.random()
    if depth > 5 or kind < 0.5:
        return rnd.choice(SCALARS)
    size = rnd.randint(0, 30 if depth < 1 else 4)
    if kind < 0.75:
        return [random_value(rnd, depth + 1) for _ in range(size)]
    return {rnd.choice(KEYS) + str(rnd.randint(0, 50)): random_value(rnd, depth + 1) for _ in range(size)}


def random_text(rnd: random.Random) -> str:
    value = random_value(rnd)
    if rnd.random() < 0.1:
        value = [value] * rnd.randint(50, 300)  # long runs of similar members
    style = rnd.random()
    text = (json.dumps(value) if style < 0.4 else
            json.dumps(value, separators=(',', ':')) if style < 0.7 else
            json.dumps(value, indent=rnd.choice([1, 2, 3])) if style < 0.9 else
            json.dumps(value, indent='\t'))
    if rnd.random() < 0.5 and text:  # break it
        chars = list(text)
        for _ in range(rnd.randint(1, 3)):
            if not chars:
                break
            index = rnd.randrange(len(chars))
            action = rnd.random()
            if action < 0.4:
                del chars[index]
            elif action < 0.8:
                chars.insert(index, rnd.choice(',]}[{":  1x\x01\\'))
            else:
                chars[index] = rnd.choice(',]}[{":')
        text = ''.join(chars)
    return text


def outcome(text: str, *, max_depth: int, **kwargs: Any) -> Tuple[str, Any]:
    """What happens to the text: parsed (to what), refused as a non-JSON, or refused as too deep."""
    try:
        value = parse(text, **kwargs)
    except NestingTooDeepError:
        return 'refused', None
    except ValueError:
        return 'refused', None
    return 'parsed', value


def expected_outcome(text: str, *, max_depth: int) -> Tuple[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return 'refused', None
    return ('parsed', value) if depth_of(value) <= max_depth else ('refused', None)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.fixture(params=['real-limits', 'tiny-limits'])
def limits(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The real limits, or tiny ones to exercise the fallbacks (shrinking runs, member-by-member parsing)."""
    if request.param == 'tiny-limits':
        monkeypatch.setattr(_parsing, 'MAX_DEPTH', 6)
        monkeypatch.setattr(_parsing, 'C_DEPTH', 3)
        monkeypatch.setattr(_parsing, '_RUN_SIZE', 512)
        monkeypatch.setattr(_parsing, '_RUN_MIN_SIZE', 8)
    yield _parsing.MAX_DEPTH


@pytest.mark.parametrize('seed', range(3))
@pytest.mark.parametrize('slice_duration', [_parsing.SLICE_DURATION, 0.0])
def test_random_documents_are_parsed_and_refused_as_json_loads_does(
        seed: int, slice_duration: float, limits: int,
) -> None:
    rnd = random.Random(seed)
    for _ in range(100):
        text = random_text(rnd)
        expected = expected_outcome(text, max_depth=limits)
        actual = outcome(text, max_depth=limits, slice_duration=slice_duration)
        assert actual[0] == expected[0], text
        assert same(actual[1], expected[1]), text


@pytest.mark.parametrize('text', [
    '[]', '{}', '  [ ]  ', '"s"', '12', '-0.5e3', 'true', 'null', 'NaN', '[-Infinity, Infinity]',
    '{"a": {"b": [{"c": {}}]}}', '{"a": 1, "a": 2}', '{"a":1,"b":[1,2,3],"c":{"d":null}}',
    '[' + ','.join(['{"a":[1,{"b":"c"}]}'] * 5000) + ']',
    '{' + ','.join(f'"k{i}":{{"v":[{i}]}}' for i in range(5000)) + '}',
])
def test_valid_documents_are_parsed_as_json_loads_does(text: str) -> None:
    assert same(parse(text), json.loads(text))


@pytest.mark.parametrize('text', [
    '', '  ', '[', '[1,]', '[,1]', '[1 2]', '{"a" 1}', '{"a":1,}', '{,}', '{1:2}', '[1]x', '"\x01"',
    '[' + '1,' * 5000 + ']', '{' + '"a":1,' * 5000 + '}', '[' + '[1],' * 5000 + '[1]',
])
def test_invalid_documents_are_refused_as_json_loads_does(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        parse(text)


@pytest.mark.parametrize('text', [
    pytest.param('[' * MAX_DEPTH + ']' * MAX_DEPTH, id='lists'),
    pytest.param('{"a":' * MAX_DEPTH + '1' + '}' * MAX_DEPTH, id='objects'),
    pytest.param('[' * (MAX_DEPTH - 1) + '{}' + ']' * (MAX_DEPTH - 1), id='mixed'),
    pytest.param('[' + ','.join(['[' * 300 + ']' * 300] * 50) + ']', id='many-deep-members'),
])
def test_nesting_up_to_the_limit_is_parsed(text: str) -> None:
    assert depth_of(parse(text)) <= MAX_DEPTH


@pytest.mark.parametrize('text', [
    pytest.param('[' * (MAX_DEPTH + 1) + ']' * (MAX_DEPTH + 1), id='lists'),
    pytest.param('{"a":' * (MAX_DEPTH + 1) + '1' + '}' * (MAX_DEPTH + 1), id='objects'),
    pytest.param('[' * MAX_DEPTH + '{}' + ']' * MAX_DEPTH, id='mixed'),
    pytest.param('[' * 100_000, id='100k-unclosed'),
    pytest.param('[' * 100_000 + ']' * 100_000, id='100k-closed'),
])
def test_nesting_beyond_the_limit_is_refused_quickly(text: str) -> None:
    started = time.monotonic()
    with pytest.raises(NestingTooDeepError, match=r"nested deeper than 1000 levels"):
        parse(text)
    assert time.monotonic() - started < 2.0


def test_long_documents_are_parsed_in_several_slices() -> None:
    text = json.dumps({'request': {'items': [{'a': i, 'b': [i, str(i)]} for i in range(40_000)]}})
    assert count_slices(text, slice_duration=0.001) > 5
    assert count_slices(text, slice_duration=1000) == 0


async def test_small_bodies_are_parsed_at_once() -> None:
    assert await JsonParser().parse(b'{"request": {"uid": "x"}}') == {'request': {'uid': 'x'}}


@pytest.mark.parametrize('raw', [
    pytest.param(json.dumps([[i] * 3 for i in range(50_000)]).encode('utf-8'), id='large'),
    pytest.param(json.dumps([[i] * 3 for i in range(50_000)]).encode('utf-16'), id='large-utf16'),
    pytest.param(json.dumps({'x': '\u00fc' * 100}).encode('utf-8-sig'), id='with-bom'),
    pytest.param(b'[' * 300 + b']' * 300, id='small-but-deep'),
])
async def test_bodies_are_decoded_and_parsed_as_json_loads_does(raw: bytes) -> None:
    assert await JsonParser().parse(raw) == json.loads(raw)


@pytest.mark.parametrize('raw', [
    pytest.param(b'\xff\xfe\x00', id='not-utf8'),
    pytest.param(b'[' * 100_000, id='deep'),
    pytest.param(b'[' + b'1,' * 100_000 + b']', id='large-invalid'),
])
async def test_bodies_that_are_not_json_are_refused_with_value_errors(raw: bytes) -> None:
    with pytest.raises(ValueError):
        await JsonParser().parse(raw)


async def test_large_bodies_are_parsed_one_at_a_time_while_the_loop_goes_on() -> None:
    parser = JsonParser()
    raw = json.dumps([{'a': i, 'b': [i, str(i)]} for i in range(20_000)]).encode()
    ticks = 0
    parsing = asyncio.gather(parser.parse(raw), parser.parse(raw))
    while not parsing.done():
        await asyncio.sleep(0)
        ticks += 1
    first, second = await parsing
    assert first == second == json.loads(raw)
    assert ticks > 2  # the loop ran other tasks meanwhile
