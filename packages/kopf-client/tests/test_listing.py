"""
A list response read in chunks, its items kept as texts and decoded as taken (``kopf_client._listing``).

The result is the same as decoding the whole response at once, however the
text is cut into parts; what differs is when the items are decoded, and so
how much of the response is in memory at once.
"""
from __future__ import annotations

import json
import tracemalloc
from typing import TYPE_CHECKING, Any, Dict, List

import pytest
from aiohttp import web

import kopf
from kopf_client import AiohttpClient
from kopf_client._listing import LazyItems, Splitter, decode_listing

if TYPE_CHECKING:
    from conftest import FakeApi

ITEMS: List[Dict[str, Any]] = [
    {'metadata': {'name': 'a', 'labels': {'x': 'y'}}, 'spec': {'list': [1, 2.5, None, True, -3e5], 'text': 'a "]}"'}},
    {'metadata': {'name': 'b'}, 'data': {'unicode': 'ñ✓', 'escaped': '\\u00e9\n'}},
    {'metadata': {'name': 'c'}, 'size': 12345},
]
HEAD = {'kind': 'WidgetList', 'apiVersion': 'kopf.dev/v1', 'metadata': {'resourceVersion': '123', 'continue': 'x'}}


def split(text: str, size: int) -> Splitter:
    splitter = Splitter()
    for start in range(0, len(text), size):
        splitter.feed(text[start:start + size])
    return splitter


@pytest.mark.parametrize('indent', [None, 2], ids=['compact', 'indented'])
def test_the_same_result_however_the_text_is_cut(indent: Any) -> None:
    document = {**HEAD, 'items': ITEMS, 'after': 1234}  # a number at the end: it may go on in the next part
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    for size in range(1, len(text) + 1):
        listing = split(text, size).finish()
        assert listing is not None
        assert list(listing.items) == ITEMS, size
        assert listing.head == {**HEAD, 'after': 1234}, size


def test_only_the_items_texts_are_kept() -> None:
    listing = decode_listing(json.dumps({**HEAD, 'items': ITEMS}))
    assert listing is not None
    assert isinstance(listing.items, LazyItems)
    assert [json.loads(text) for text in listing.items.texts] == ITEMS


def test_every_iteration_decodes_the_items_anew() -> None:
    listing = decode_listing(json.dumps({**HEAD, 'items': ITEMS}))
    assert listing is not None
    first, second = list(listing.items), list(listing.items)
    assert first == second == ITEMS
    assert all(one is not other for one, other in zip(first, second, strict=True))


def test_length_indexing_and_equality_behave_as_those_of_a_list() -> None:
    listing = decode_listing(json.dumps({**HEAD, 'items': ITEMS}))
    assert listing is not None
    items = listing.items
    assert len(items) == 3
    assert items[1] == ITEMS[1] and items[-1] == ITEMS[-1]
    assert items[:2] == ITEMS[:2]
    assert items == ITEMS and ITEMS == items
    assert items != ITEMS[:2]
    assert items != tuple(ITEMS)  # as a list is not equal to a tuple


def test_converted_items_are_converted_as_decoded() -> None:
    listing = decode_listing(json.dumps({**HEAD, 'items': ITEMS}))
    assert listing is not None
    names = listing.map(lambda item: item['metadata']['name'])
    assert list(names) == ['a', 'b', 'c'] and names[1] == 'b' and list(names[1:]) == ['b', 'c']


def test_the_metadata_after_the_items_is_in_the_head() -> None:
    listing = decode_listing(json.dumps({'items': ITEMS, **HEAD}))
    assert listing is not None
    assert listing.head == HEAD and list(listing.items) == ITEMS


@pytest.mark.parametrize('document', [
    pytest.param({**HEAD, 'items': []}, id='empty'),
    pytest.param({**HEAD, 'items': None}, id='null'),
    pytest.param({**HEAD}, id='absent'),
    pytest.param({}, id='empty-object'),
])
def test_no_items(document: Dict[str, Any]) -> None:
    listing = decode_listing(json.dumps(document))
    assert listing is not None
    assert list(listing.items) == [] and len(listing.items) == 0
    assert {key: value for key, value in listing.head.items() if key != 'items'} == \
           {key: value for key, value in document.items() if key != 'items'}


@pytest.mark.parametrize('text', ['', '  \n'])
def test_an_empty_body_is_none(text: str) -> None:
    assert decode_listing(text) is None


@pytest.mark.parametrize('text', [
    pytest.param('[1, 2]', id='an-array'),
    pytest.param('{"metadata": {}', id='unclosed'),
    pytest.param('{"metadata": {} "kind": "x"}', id='no-comma'),
    pytest.param('{metadata: {}}', id='unquoted-key'),
    pytest.param('{"metadata" {}}', id='no-colon'),
    pytest.param('{"metadata": {}} extra', id='extra-data'),
    pytest.param('{"items": [{"a": 1},]}', id='trailing-comma-in-items'),
    pytest.param('{"items": [{"a": 1} {"b": 2}]}', id='no-comma-in-items'),
    pytest.param('{"items": [{"a": 1}', id='unclosed-items'),
    pytest.param('{"items": [{"a": 1', id='unclosed-item'),
    pytest.param('{"items": [], "n": 12', id='unclosed-after-a-number'),
])
def test_malformed_responses_fail(text: str) -> None:
    with pytest.raises(ValueError):
        split(text, 3).finish()


def test_a_large_item_in_many_parts_is_not_parsed_over_and_over(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = 0
    real_raw_decode = json.JSONDecoder.raw_decode

    def counting_raw_decode(self: json.JSONDecoder, text: str, idx: int = 0) -> Any:
        nonlocal attempts
        attempts += 1
        return real_raw_decode(self, text, idx)

    monkeypatch.setattr(json.JSONDecoder, 'raw_decode', counting_raw_decode)
    big = {'metadata': {'name': 'big'}, 'data': {f'key{i}': 'x' * 100 for i in range(1000)}}  # ~110 KB
    listing = split(json.dumps({'metadata': {}, 'items': [big]}), 100).finish()  # ~1,100 parts
    assert listing is not None and list(listing.items) == [big]
    assert attempts < 40  # the attempts double the text each time, not one attempt per part


def test_a_long_listing_is_never_in_memory_as_its_objects() -> None:
    item = {'metadata': {'name': 'x' * 20, 'labels': {f'label{i}': 'value' for i in range(20)}}}
    text = json.dumps({**HEAD, 'items': [item] * 2000})
    tracemalloc.start()
    try:
        json.loads(text)
        _, whole_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        listing = split(text, 65536).finish()
        assert listing is not None
        for _ in listing.items:
            pass
        _, split_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The items' texts are held (about a sixth of the parsed objects), but never all objects at once.
    assert split_peak < whole_peak / 3


async def test_the_client_reads_a_listing_in_chunks(api: FakeApi, client: AiohttpClient) -> None:
    text = json.dumps({**HEAD, 'items': ITEMS * 1000}, ensure_ascii=False).encode('utf-8')

    async def respond_in_small_chunks(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={'Content-Type': 'application/json'})
        await response.prepare(request)
        for start in range(0, len(text), 1001):  # cuts multi-byte characters too
            await response.write(text[start:start + 1001])
        await response.write_eof()
        return response

    api.add_handler('/apis/kopf.dev/v1/widgets', respond_in_small_chunks)
    page = await client.list_objects(kopf.Resource('kopf.dev', 'v1', 'widgets', kind='Widget'), namespace=None)
    assert page.resource_version == '123' and page.continue_token == 'x'
    assert list(page.items) == [{'apiVersion': 'kopf.dev/v1', 'kind': 'Widget', **item} for item in ITEMS * 1000]
