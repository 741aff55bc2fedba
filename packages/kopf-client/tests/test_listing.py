"""
A list response's items decoded one by one as they are taken (``kopf_client._listing``).

The result is the same as decoding the whole response; what differs is when
the items are decoded, and so how many of them are in memory at once.
"""
import json
import tracemalloc
from typing import Any, Dict, List

import pytest

from kopf_client._listing import LazyItems, decode_listing

ITEMS: List[Dict[str, Any]] = [
    {'metadata': {'name': 'a', 'labels': {'x': 'y'}}, 'spec': {'list': [1, 2.5, None, True], 'text': 'a "]}" b'}},
    {'metadata': {'name': 'b'}, 'data': {'unicode': 'ñ✓', 'escaped': '\\u00e9\n'}},
    {'metadata': {'name': 'c'}},
]
HEAD = {'kind': 'WidgetList', 'apiVersion': 'kopf.dev/v1', 'metadata': {'resourceVersion': '123', 'continue': 'x'}}


def encoded(document: Any, **kwargs: Any) -> bytes:
    return json.dumps(document, **kwargs).encode('utf-8')


@pytest.mark.parametrize('indent', [None, 2], ids=['compact', 'indented'])
def test_items_after_the_metadata_are_decoded_as_taken(indent: Any) -> None:
    listing = decode_listing(encoded({**HEAD, 'items': ITEMS}, indent=indent, ensure_ascii=False))
    assert isinstance(listing.items, LazyItems)
    assert listing.head == HEAD
    assert list(listing.items) == ITEMS


def test_every_iteration_decodes_the_items_anew() -> None:
    listing = decode_listing(encoded({**HEAD, 'items': ITEMS}))
    first, second = list(listing.items), list(listing.items)
    assert first == second == ITEMS
    assert all(one is not other for one, other in zip(first, second, strict=True))


def test_items_are_decoded_one_at_a_time() -> None:
    raw = b'{"metadata": {}, "items": [{"metadata": {"name": "a"}}, {"broken'
    listing = decode_listing(raw)  # the head is fine; the items are not decoded yet
    iterator = iter(listing.items)
    assert next(iterator) == {'metadata': {'name': 'a'}}
    with pytest.raises(ValueError):
        next(iterator)


def test_length_indexing_and_equality_behave_as_those_of_a_list() -> None:
    items = decode_listing(encoded({**HEAD, 'items': ITEMS})).items
    assert len(items) == 3
    assert items[1] == ITEMS[1] and items[-1] == ITEMS[-1]
    assert items[:2] == ITEMS[:2]
    assert items == ITEMS and ITEMS == items
    assert items == decode_listing(encoded({**HEAD, 'items': ITEMS})).items
    assert items != ITEMS[:2]
    assert items != tuple(ITEMS)  # type: ignore[comparison-overlap]  # as a list is not equal to a tuple


def test_converted_items_are_converted_as_decoded() -> None:
    listing = decode_listing(encoded({**HEAD, 'items': ITEMS}))
    names = listing.map(lambda item: item['metadata']['name'])
    assert isinstance(names, LazyItems)
    assert list(names) == ['a', 'b', 'c']


@pytest.mark.parametrize('document', [
    pytest.param({'items': ITEMS, **HEAD}, id='metadata-after-items'),
    pytest.param({'kind': 'WidgetList', 'items': ITEMS}, id='no-metadata'),
], )
def test_items_before_the_metadata_are_decoded_at_once(document: Dict[str, Any]) -> None:
    listing = decode_listing(encoded(document))
    assert isinstance(listing.items, list)
    assert listing.items == ITEMS
    assert listing.head == {key: value for key, value in document.items() if key != 'items'}
    assert listing.map(lambda item: item['metadata']['name']) == ['a', 'b', 'c']


@pytest.mark.parametrize('document, expected_items', [
    pytest.param({**HEAD, 'items': []}, [], id='empty'),
    pytest.param({**HEAD, 'items': None}, [], id='null'),
    pytest.param({**HEAD}, [], id='absent'),
    pytest.param({}, [], id='empty-object'),
])
def test_no_items(document: Dict[str, Any], expected_items: List[Any]) -> None:
    listing = decode_listing(encoded(document))
    assert list(listing.items) == expected_items
    assert listing.head == HEAD if document else listing.head == {}


def test_fields_after_the_items_come_into_the_head_at_the_end_of_an_iteration() -> None:
    listing = decode_listing(encoded({**HEAD, 'items': ITEMS, 'extra': {'a': 1}}))
    assert 'extra' not in listing.head
    assert list(listing.items) == ITEMS
    assert listing.head == {**HEAD, 'extra': {'a': 1}}


@pytest.mark.parametrize('raw', [
    pytest.param(b'', id='empty'),
    pytest.param(b'[1, 2]', id='an-array'),
    pytest.param(b'{"metadata": {}', id='unclosed-head'),
    pytest.param(b'{"metadata": {} "kind": "x"}', id='no-comma-in-head'),
    pytest.param(b'{metadata: {}}', id='unquoted-key'),
    pytest.param(b'{"metadata" {}}', id='no-colon'),
    pytest.param(b'{"metadata": {}} extra', id='extra-data'),
    pytest.param(b'\xff{}', id='not-utf-8'),
])
def test_malformed_heads_fail_at_once(raw: bytes) -> None:
    with pytest.raises(ValueError):
        decode_listing(raw)


@pytest.mark.parametrize('raw', [
    pytest.param(b'{"metadata": {}, "items": [{"a": 1},]}', id='trailing-comma'),
    pytest.param(b'{"metadata": {}, "items": [{"a": 1} {"b": 2}]}', id='no-comma'),
    pytest.param(b'{"metadata": {}, "items": [{"a": 1}', id='unclosed-items'),
    pytest.param(b'{"metadata": {}, "items": [{"a": 1}]', id='unclosed-object'),
    pytest.param(b'{"metadata": {}, "items": [{"a": 1}]} extra', id='extra-data'),
    pytest.param(b'{"metadata": {}, "items": [{"a": 1}], "kind" "x"}', id='malformed-tail'),
])
def test_malformed_items_fail_when_iterated_over(raw: bytes) -> None:
    listing = decode_listing(raw)
    with pytest.raises(ValueError):
        list(listing.items)


def test_a_long_listing_taken_item_by_item_is_never_in_memory_as_a_whole() -> None:
    item = {'metadata': {'name': 'x' * 20, 'labels': {f'label{i}': 'value' for i in range(20)}}}
    raw = encoded({**HEAD, 'items': [item] * 2000})

    tracemalloc.start()
    try:
        json.loads(raw)
        _, whole_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in decode_listing(raw).items:
            pass
        _, lazy_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The text itself is held (about a sixth of the parsed objects), but never all objects at once.
    assert lazy_peak < whole_peak / 3
