"""
The shard hash and the ``shardRange(...)`` selectors, against known vectors.

The hash vectors are FNV-1a 64's published ones plus values computed with Go's
``hash/fnv`` (what the API server uses), so that our client-side filtering and
a server-side one split the objects the same way.
"""
import random
import uuid

import pytest

from kopf._cogs.structs import shards

HALF = 0x8000000000000000


@pytest.mark.parametrize('value, expected', [
    ('', 0xcbf29ce484222325),
    ('a', 0xaf63dc4c8601ec8c),
    ('foobar', 0x85944171f73967e8),
    ('aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee', 0x93754b7248a00eb9),
    ('default', 0xebada5168620c5fe),
    ('kube-system', 0xdf65c7bc1d82b35e),
    ('привет', 0x1bd8a912173e871f),  # the UTF-8 bytes are hashed, not the characters
])
def test_the_hash_is_fnv1a_64_of_the_utf8_bytes(value: str, expected: int) -> None:
    assert shards.hash_value(value) == expected


def test_a_single_range_is_parsed_with_its_bounds() -> None:
    selector = shards.parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
    assert selector.field == 'object.metadata.uid'
    assert selector.ranges == (shards.ShardRange('object.metadata.uid', 0, HALF),)


def test_the_end_of_the_hash_space_is_accepted_as_the_end() -> None:
    selector = shards.parse("shardRange(object.metadata.namespace,'0x8000000000000000','0x10000000000000000')")
    assert selector.ranges == (shards.ShardRange('object.metadata.namespace', HALF, 1 << 64),)


def test_ranges_joined_with_or_match_in_any_of_them() -> None:
    selector = shards.parse("shardRange(object.metadata.uid, '0x8000000000000000', '0x9000000000000000') || "
                            "shardRange(object.metadata.uid, '0xe000000000000000', '0x10000000000000000')")
    assert len(selector.ranges) == 2
    assert selector.matches({'metadata': {'uid': 'foobar'}})  # 0x8594...: in the first
    assert selector.matches({'metadata': {'uid': 'default'}})  # 0xebad...: in the second
    assert not selector.matches({'metadata': {'uid': 'a'}})  # 0xaf63...: in neither


def test_the_start_is_inclusive_and_the_end_exclusive() -> None:
    value = 'default'  # 0xebada5168620c5fe
    exact = shards.hash_value(value)
    at_start = shards.parse(f"shardRange(object.metadata.namespace, '0x{exact:016x}', '0x10000000000000000')")
    at_end = shards.parse(f"shardRange(object.metadata.namespace, '0x0000000000000000', '0x{exact:016x}')")
    assert at_start.matches({'metadata': {'namespace': value}})
    assert not at_end.matches({'metadata': {'namespace': value}})


def test_complementary_ranges_split_objects_exactly_once() -> None:
    lower = shards.parse(shards.format_range('object.metadata.uid', 0, HALF))
    upper = shards.parse(shards.format_range('object.metadata.uid', HALF, 1 << 64))
    generator = random.Random(42)  # uids as the API server makes them (version 4), but reproducible
    bodies = [{'metadata': {'uid': str(uuid.UUID(int=generator.getrandbits(128), version=4))}} for _ in range(200)]
    in_lower = [body for body in bodies if lower.matches(body)]
    in_upper = [body for body in bodies if upper.matches(body)]
    assert len(in_lower) + len(in_upper) == len(bodies)
    assert not any(body in in_upper for body in in_lower)
    assert 60 < len(in_lower) < 140  # the hash spreads them (not all to one side)


def test_a_cluster_scoped_object_hashes_an_empty_namespace() -> None:
    selector = shards.parse("shardRange(object.metadata.namespace, '0xcbf29ce484222325', '0xcbf29ce484222326')")
    assert selector.matches({'metadata': {'name': 'cluster-wide'}})


def test_formatting_pads_the_bounds_with_zeroes() -> None:
    assert shards.format_range('object.metadata.uid', 0, HALF) == \
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    assert shards.format_range('object.metadata.uid', HALF, 1 << 64).endswith("'0x10000000000000000')")


@pytest.mark.parametrize('selector, message', [
    ("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", r"did you mean '0x0000000000000000'"),
    ("shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')", r"16 lowercase hex digits"),
    ("shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')", r"start below its end"),
    ("shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')", r"only object.metadata.uid"),
    ("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
     "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')", r"the same field"),
    ("object.metadata.uid in 0..8", r"must be shardRange"),
    ("shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')", r"hex digits"),
])
def test_bad_selectors_are_refused_with_what_is_expected(selector: str, message: str) -> None:
    with pytest.raises(shards.ShardSelectorError, match=message):
        shards.parse(selector)
