"""
Parsing JSON within bounds: the text is measured before it is parsed, and refused beyond the bounds.

The containers and the items are counted by their characters anywhere (in strings too);
the depth is exact. Within the bounds, the result is what ``json.loads`` gives.
"""
import json
import random
from typing import Any, List

import pytest

from kopf._cogs.configs import boundedjson

BOUNDS = boundedjson.Bounds(size=1000, containers=10, items=20, depth=3)


def depth_of(value: Any) -> int:
    """The nesting of a parsed value, as the reference: the outermost container is at 1."""
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


@pytest.mark.parametrize('text', [
    '{"spec":{"field":"value","items":["a"]},"metadata":{"labels":{"app":"x"}}}\n',
    '  [1, 2.5, true, false, null, "x"]  ',
    '"just a string"',
    '{"a":"[{\\"b\\\\\\"\\\\\\\\\\"]}","c":"\\u005b"}',
    '{"unicode":"ÿ€𝄞","escaped":"\\u00ff\\ud834\\udd1e"}',
])
def test_text_within_the_bounds_is_parsed_as_json_loads_does(text: str) -> None:
    assert boundedjson.loads(text, BOUNDS) == json.loads(text)


def test_size_exactly_at_the_bound_is_parsed_and_one_byte_more_is_refused() -> None:
    text = '"' + 'x' * (BOUNDS.size - 2) + '"'
    assert boundedjson.loads(text, BOUNDS) == 'x' * (BOUNDS.size - 2)
    with pytest.raises(boundedjson.BoundExceededError, match=r"more than 1,000 bytes"):
        boundedjson.loads(text + ' ', BOUNDS)


def test_size_is_counted_in_utf8_bytes() -> None:
    text = '"' + 'ÿ' * (BOUNDS.size // 2 - 1) + '"'  # 2 bytes each
    assert boundedjson.loads(text, BOUNDS)
    with pytest.raises(boundedjson.BoundExceededError):
        boundedjson.loads(text + '\t', BOUNDS)


def test_containers_exactly_at_the_bound_are_parsed_and_one_more_is_refused() -> None:
    text = '[' + ','.join(['[]'] * (BOUNDS.containers - 1)) + ']'
    assert boundedjson.loads(text, BOUNDS) == [[]] * (BOUNDS.containers - 1)
    with pytest.raises(boundedjson.BoundExceededError, match=r"more than 10 containers"):
        boundedjson.loads('[' + ','.join(['{}'] * BOUNDS.containers) + ']', BOUNDS)


def test_items_exactly_at_the_bound_are_parsed_and_one_more_is_refused() -> None:
    text = '[' + ','.join(['0'] * BOUNDS.items) + ']'
    assert boundedjson.loads(text, BOUNDS) == [0] * BOUNDS.items
    with pytest.raises(boundedjson.BoundExceededError, match=r"more than 20 items"):
        boundedjson.loads('[' + ','.join(['0'] * (BOUNDS.items + 1)) + ']', BOUNDS)


def test_items_are_the_members_of_all_containers() -> None:
    bounds = boundedjson.Bounds(size=1000, containers=100, items=20, depth=3)
    assert boundedjson.loads('[' + ','.join(['[0]'] * 10) + ']', bounds)  # 10 lists, 10 zeroes in them
    with pytest.raises(boundedjson.BoundExceededError, match=r"more than 20 items"):
        boundedjson.loads('[' + ','.join(['[0]'] * 11) + ']', bounds)


def test_depth_exactly_at_the_bound_is_parsed_and_one_level_more_is_refused() -> None:
    assert boundedjson.loads('[{"a":[1]}]', BOUNDS) == [{'a': [1]}]
    with pytest.raises(boundedjson.BoundExceededError, match=r"nested deeper than 3 levels"):
        boundedjson.loads('[{"a":[[]]}]', BOUNDS)


def test_brackets_and_commas_in_strings_are_counted_as_containers_and_items() -> None:
    # It can only count more than there is: cheaper than tokenizing, and real records stay far below.
    with pytest.raises(boundedjson.BoundExceededError, match=r"containers"):
        boundedjson.loads('"' + '[' * BOUNDS.containers + '{"', BOUNDS)
    with pytest.raises(boundedjson.BoundExceededError, match=r"containers"):
        boundedjson.loads('"' + '}' * (BOUNDS.containers + 1) + '"', BOUNDS)
    with pytest.raises(boundedjson.BoundExceededError, match=r"items"):
        boundedjson.loads('"' + ',' * (BOUNDS.items + 1) + '"', BOUNDS)


@pytest.mark.parametrize('hider', ['"]]]"', '"\\"]]]"', '"\\\\\\"]]]"'])
def test_closing_brackets_in_strings_do_not_hide_the_depth(hider: str) -> None:
    bounds = boundedjson.Bounds(size=1000, containers=100, items=100, depth=3)
    with pytest.raises(boundedjson.BoundExceededError, match=r"nested deeper"):
        boundedjson.loads(f'[{hider},[[[1]]]]', bounds)


def test_opening_brackets_in_strings_do_not_add_to_the_depth() -> None:
    bounds = boundedjson.Bounds(size=1000, containers=100, items=100, depth=2)
    assert boundedjson.loads('[["[[[", "\\\\", "{{\\"{"]]', bounds) == [['[[[', '\\', '{{"{']]


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """Containers and strings full of brackets, quotes and backslashes: what the measuring must see through."""
    kind = rng.choice(['dict', 'list', 'str', 'str', 'num'] if depth < 8 else ['str', 'num'])
    if kind == 'dict':
        return {random_string(rng): random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if kind == 'list':
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return random_string(rng) if kind == 'str' else rng.randint(-5, 5)


def random_string(rng: random.Random) -> str:
    return ''.join(rng.choice('[]{}",\\\\ab\n') for _ in range(rng.randint(0, 6)))


@pytest.mark.parametrize('seed', range(20))
def test_depth_is_exact_whatever_the_strings_hold(seed: int) -> None:
    rng = random.Random(seed)
    values: List[Any] = [random_json(rng) for _ in range(50)]
    for value in values:
        for text in [json.dumps(value), json.dumps(value, separators=(',', ':'), ensure_ascii=False)]:
            assert boundedjson.measure_depth(text.encode('utf-8')) == depth_of(value)


def test_deep_nesting_never_raises_recursion_error() -> None:
    # Bounds as deep as the stack cannot go: json.loads would raise RecursionError, it is refused instead.
    bounds = boundedjson.Bounds(size=1 << 20, containers=1 << 20, items=1 << 20, depth=1 << 20)
    with pytest.raises(boundedjson.BoundExceededError, match=r"nested too deep"):
        boundedjson.loads('[' * 90_000 + ']' * 90_000, bounds)


@pytest.mark.parametrize('text', ['', '{', '[1,]', '{"a"}', ']]]]', '"\\', 'nan?'])
def test_what_is_not_json_is_a_value_error_as_in_json_loads(text: str) -> None:
    with pytest.raises(ValueError) as error:
        boundedjson.loads(text, BOUNDS)
    assert not isinstance(error.value, boundedjson.BoundExceededError)


def test_tally_adds_up_the_pieces_and_refuses_at_the_first_excessive_one() -> None:
    tally = boundedjson.Tally(BOUNDS)
    tally.add(b'[' + b'{},' * 4)
    tally.add(b'{},' * 4)  # 9 containers so far
    assert (tally.size, tally.openings, tally.closings, tally.commas) == (25, 9, 8, 8)
    with pytest.raises(boundedjson.BoundExceededError, match=r"more than 10 containers"):
        tally.add(b'{},{}]')
