"""
Diff-bases forged by whoever may patch an object: read within bounds, or ignored.

A packed diff-base of a few KiB could unpack into millions of empty containers
(hundreds of MiB and seconds of the event loop in ``json.loads``), and a plain one
nested 90,000 levels deep would raise ``RecursionError`` on every attempt. Both are
ignored now, as broken ones are (the object has no diff-base then), and reported.
"""
import base64
import gzip
import json
import time
import tracemalloc
from typing import Any, Dict, Iterator, List, Optional

import pytest

from kopf._cogs.configs import diffbase, packing
from kopf._cogs.structs import bodies, patches

PLAIN_KEY = 'kopf.zalando.org/last-handled-configuration'
PACKED_KEY = 'kopf.zalando.org/last-handled-configuration-packed'
MiB = 1024 * 1024


def make_body(annotations: Optional[Dict[str, str]] = None, **fields: Any) -> bodies.Body:
    return bodies.Body({'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
                        'metadata': {'name': 'obj', 'namespace': 'ns', 'annotations': annotations or {}}, **fields})


def packed(text: str) -> str:
    """Packed as anyone can pack it: gzip at its best, in base64, after the header."""
    return 'v1:gzip+base64:' + base64.b64encode(gzip.compress(text.encode('utf-8'), 9)).decode('ascii')


def spec_of(items: str, count: int) -> str:
    """A diff-base whose spec is a list of the same item: ``{"spec":[{},{},…]}``."""
    return '{"spec":[' + ','.join([items] * count) + ']}\n'


@pytest.fixture()
def ignored() -> Iterator[List[packing.Ignored]]:
    with packing.collecting_ignored() as collected:
        yield collected


def fetch_measured(storage: diffbase.DiffBaseStorage, body: bodies.Body) -> tuple[Any, float, int]:
    """The fetched essence, the seconds it took, and the peak of the memory allocated meanwhile."""
    tracemalloc.start()
    try:
        started = time.perf_counter()
        essence = storage.fetch(body=body)
        duration = time.perf_counter() - started
        return essence, duration, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# The attacks.

@pytest.mark.parametrize('megabytes', [16, 8])  # over the size, and under it but with millions of containers
def test_packed_bomb_of_empty_objects_is_ignored_in_bounded_memory_and_time(megabytes: int) -> None:
    bomb = packed(spec_of('{}', megabytes * MiB // 3 - 10))
    assert len(bomb) < 32 * 1024  # it fits the annotations many times over
    body = make_body({PACKED_KEY: bomb})
    essence, duration, peak = fetch_measured(diffbase.AnnotationsDiffBaseStorage(), body)
    assert peak < 4 * MiB  # refused while unpacking, after its first 100,000 containers; not ~800 MiB of dicts
    assert duration < 1.0  # milliseconds; generous for the machines busy with other tests
    assert essence is None


def test_packed_bomb_in_the_status_is_ignored_in_bounded_memory() -> None:
    bomb = packed(spec_of('[]', 16 * MiB // 3 - 10))
    body = make_body(status={'kopf': {'last-handled-configuration-packed': bomb}})
    essence, _, peak = fetch_measured(diffbase.StatusDiffBaseStorage(), body)
    assert peak < 4 * MiB
    assert essence is None


@pytest.mark.parametrize('storage, body', [
    pytest.param(diffbase.AnnotationsDiffBaseStorage(), make_body({PLAIN_KEY: '[' * 90_000}), id='annotations'),
    pytest.param(diffbase.StatusDiffBaseStorage(),
                 make_body(status={'kopf': {'last-handled-configuration': '{"a":' * 90_000}}), id='status'),
    pytest.param(diffbase.AnnotationsDiffBaseStorage(), make_body({PACKED_KEY: packed('[' * 90_000)}), id='packed'),
])
def test_deep_diffbase_is_ignored_not_raised(storage: diffbase.DiffBaseStorage, body: bodies.Body) -> None:
    assert storage.fetch(body=body) is None  # no RecursionError


def test_deep_diffbase_that_is_valid_json_is_ignored_not_raised() -> None:
    deep = '{"spec":' + '[' * 90_000 + ']' * 90_000 + '}'
    assert diffbase.AnnotationsDiffBaseStorage().fetch(body=make_body({PLAIN_KEY: deep})) is None


def test_packed_bomb_of_a_long_string_is_ignored_at_the_size_bound() -> None:
    bomb = packed('{"spec":"' + 'x' * (16 * MiB) + '"}')  # no containers to count: only its size stops it
    essence, _, peak = fetch_measured(diffbase.AnnotationsDiffBaseStorage(), make_body({PACKED_KEY: bomb}))
    assert peak < 24 * MiB  # the unpacked steps up to the size bound, and their joining; not 16 MiB twice or more
    assert essence is None


# The bounds: exactly at each, and just over it.

def test_unpacked_size_exactly_at_the_bound_is_read_and_one_byte_more_is_ignored(
        ignored: List[packing.Ignored]) -> None:
    at_bound = '{"spec":"' + 'x' * (packing.READ_BOUNDS.size - 11) + '"}'
    assert len(at_bound) == packing.READ_BOUNDS.size
    storage = diffbase.AnnotationsDiffBaseStorage()
    assert storage.fetch(body=make_body({PACKED_KEY: packed(at_bound)})) == json.loads(at_bound)
    assert storage.fetch(body=make_body({PACKED_KEY: packed(at_bound + '\n')})) is None
    assert [item.reason for item in ignored] == ["it unpacks into more than 8.0 MiB"]


def test_containers_exactly_at_the_bound_are_read_and_one_more_is_ignored(ignored: List[packing.Ignored]) -> None:
    count = packing.READ_BOUNDS.containers - 2  # in the spec's list, in the diff-base's object
    storage = diffbase.StatusDiffBaseStorage()
    body = make_body(status={'kopf': {'last-handled-configuration': spec_of('{}', count)}})
    assert storage.fetch(body=body) == {'spec': [{}] * count}
    body = make_body(status={'kopf': {'last-handled-configuration': spec_of('{}', count + 1)}})
    assert storage.fetch(body=body) is None
    assert [item.reason for item in ignored] == ["it has more than 100,000 containers ({} and [])"]


def test_items_exactly_at_the_bound_are_read_and_one_more_is_ignored(ignored: List[packing.Ignored]) -> None:
    count = packing.READ_BOUNDS.items - 1  # in the spec's list; the spec is an item of the diff-base's object
    storage = diffbase.AnnotationsDiffBaseStorage()
    assert storage.fetch(body=make_body({PACKED_KEY: packed(spec_of('0', count))})) == {'spec': [0] * count}
    assert storage.fetch(body=make_body({PACKED_KEY: packed(spec_of('0', count + 1))})) is None
    assert [item.reason for item in ignored] == ["it has more than 250,000 items in its containers"]


def test_depth_exactly_at_the_bound_is_read_and_one_level_more_is_ignored(ignored: List[packing.Ignored]) -> None:
    def nested(depth: int) -> str:  # the diff-base's object, its spec's list, then lists in lists
        return '{"spec":' + '[' * (depth - 1) + ']' * (depth - 1) + '}'
    storage = diffbase.AnnotationsDiffBaseStorage()
    at_bound = nested(packing.READ_BOUNDS.depth)
    assert storage.fetch(body=make_body({PLAIN_KEY: at_bound})) == json.loads(at_bound)
    assert storage.fetch(body=make_body({PLAIN_KEY: nested(packing.READ_BOUNDS.depth + 1)})) is None
    assert [item.reason for item in ignored] == ["it is nested deeper than 200 levels"]


# What is reported, and what is not.

def test_ignored_diffbase_is_reported_with_where_it_is_and_why(ignored: List[packing.Ignored]) -> None:
    diffbase.AnnotationsDiffBaseStorage().fetch(body=make_body({PACKED_KEY: packed(spec_of('{}', 200_000))}))
    diffbase.StatusDiffBaseStorage().fetch(body=make_body(status={'kopf': {'last-handled-configuration': '[' * 300}}))
    assert ignored == [
        packing.Ignored(where=f"the annotation {PACKED_KEY}", reason="it has more than 100,000 containers ({} and [])"),
        packing.Ignored(where="the field status.kopf.last-handled-configuration",
                        reason="it is nested deeper than 200 levels"),
    ]
    assert "kopf.zalando.org/last-handled-configuration-packed is ignored" in ignored[0].message
    assert "forged by whoever can patch the object" in ignored[0].message


@pytest.mark.parametrize('annotations', [
    pytest.param({PLAIN_KEY: 'not json'}, id='not-json'),
    pytest.param({PACKED_KEY: 'v1:gzip+base64:not base64!'}, id='not-base64'),
    pytest.param({PLAIN_KEY: '{"spec":{}}\n', PACKED_KEY: packed(spec_of('{}', 200_000))}, id='kopfs-first'),
])
def test_broken_or_unread_diffbases_are_not_reported(annotations: Dict[str, str],
                                                     ignored: List[packing.Ignored]) -> None:
    diffbase.AnnotationsDiffBaseStorage().fetch(body=make_body(annotations))
    assert ignored == []


def test_nothing_is_reported_outside_of_a_collector() -> None:
    assert diffbase.AnnotationsDiffBaseStorage().fetch(body=make_body({PLAIN_KEY: '[' * 300})) is None


# Kopf's diff-bases and ours are read as before.

def test_kopfs_diffbase_is_read_as_before() -> None:
    value = ('{"spec":{"field":"value","items":["a"]},'
             '"metadata":{"labels":{"app":"x"},"annotations":{"someone/else":"v"}}}\n')
    assert diffbase.AnnotationsDiffBaseStorage().fetch(body=make_body({PLAIN_KEY: value})) == json.loads(value)


def test_big_real_diffbase_is_stored_and_read_back() -> None:
    essence = {'spec': {'items': [{'name': f'item-{i}', 'image': 'registry.example.com/app:1.2.3',
                                   'ports': [{'port': 8080, 'protocol': 'TCP'}], 'note': 'a, [b] {c}'}
                                  for i in range(12_000)]}}  # 1.3 MiB, 36,000 containers: packed
    storage = diffbase.AnnotationsDiffBaseStorage()
    patch = patches.Patch()
    storage.store(body=make_body(), patch=patch, essence=essence)
    assert PACKED_KEY in patch['metadata']['annotations']
    assert storage.fetch(body=make_body(patch['metadata']['annotations'])) == essence
