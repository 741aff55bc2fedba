"""
What lists and watches send for the selectors and the streaming lists, and what a list echoes back.

Checked by the query the fake server receives: the names and the values of the
parameters are the API server's (``labelSelector``, ``fieldSelector``,
``shardSelector``, ``sendInitialEvents``, ``resourceVersionMatch``).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, List

import pytest
from aiohttp import web

import kopf
from kopf import clients
from kopf_client import AiohttpClient

if TYPE_CHECKING:
    from conftest import FakeApi

KEX = kopf.Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
KEX_PATH = '/apis/kopf.dev/v1/namespaces/ns/kopfexamples'
SHARD = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"


async def _end_at_once(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={'Content-Type': 'application/json'})
    await response.prepare(request)
    await response.write_eof()
    return response


async def _collect(client: AiohttpClient, **kwargs: object) -> List[clients.RawEvent]:
    return [event async for event in client.watch_objects(KEX, namespace='ns', **kwargs)]  # type: ignore[arg-type]


async def test_listing_sends_all_three_selectors(api: FakeApi, client: AiohttpClient) -> None:
    api.add(KEX_PATH, {'metadata': {'resourceVersion': '1'}, 'items': []})
    await client.list_objects(KEX, namespace='ns', label_selector='app=x', field_selector='metadata.name=a',
                              shard_selector=SHARD)
    assert api.requests[0].query == {'labelSelector': 'app=x', 'fieldSelector': 'metadata.name=a',
                                     'shardSelector': SHARD}


async def test_listing_sends_a_zero_limit_as_is(api: FakeApi, client: AiohttpClient) -> None:
    api.add(KEX_PATH, {'metadata': {'resourceVersion': '1'}, 'items': []})
    await client.list_objects(KEX, namespace='ns', limit=0)
    assert api.requests[0].query == {'limit': '0'}


async def test_empty_selectors_are_not_sent(api: FakeApi, client: AiohttpClient) -> None:
    api.add(KEX_PATH, {'metadata': {'resourceVersion': '1'}, 'items': []})
    await client.list_objects(KEX, namespace='ns', label_selector='', field_selector='', shard_selector='')
    assert api.requests[0].query == {}


async def test_a_list_filtered_by_the_server_reports_the_applied_shard_selector(
        api: FakeApi, client: AiohttpClient,
) -> None:
    api.add(KEX_PATH, {'metadata': {'resourceVersion': '1', 'shardInfo': {'selector': SHARD}}, 'items': []})
    page = await client.list_objects(KEX, namespace='ns', shard_selector=SHARD)
    assert page.shard_selector == SHARD


async def test_a_list_not_filtered_by_the_server_reports_no_shard_selector(
        api: FakeApi, client: AiohttpClient,
) -> None:
    api.add(KEX_PATH, {'metadata': {'resourceVersion': '1'}, 'items': []})
    page = await client.list_objects(KEX, namespace='ns', shard_selector=SHARD)
    assert page.shard_selector is None


async def test_watching_sends_all_three_selectors(api: FakeApi, client: AiohttpClient) -> None:
    api.add_handler(KEX_PATH, _end_at_once)
    await _collect(client, resource_version='5', label_selector='app=x', field_selector='metadata.name=a',
                   shard_selector=SHARD)
    assert api.requests[0].query == {'watch': 'true', 'allowWatchBookmarks': 'true', 'resourceVersion': '5',
                                     'labelSelector': 'app=x', 'fieldSelector': 'metadata.name=a',
                                     'shardSelector': SHARD}


async def test_a_streaming_list_asks_for_the_initial_events_and_bookmarks(api: FakeApi, client: AiohttpClient) -> None:
    api.add_handler(KEX_PATH, _end_at_once)
    await _collect(client, send_initial_events=True, allow_bookmarks=False)
    assert api.requests[0].query == {'watch': 'true', 'allowWatchBookmarks': 'true',
                                     'sendInitialEvents': 'true', 'resourceVersionMatch': 'NotOlderThan'}


async def test_a_streaming_list_yields_the_initial_events_and_their_end_bookmark(
        api: FakeApi, client: AiohttpClient,
) -> None:
    bookmark = {'metadata': {'resourceVersion': '7', 'annotations': {'k8s.io/initial-events-end': 'true'}}}
    lines = [{'type': 'ADDED', 'object': {'metadata': {'name': 'a'}}}, {'type': 'BOOKMARK', 'object': bookmark}]

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={'Content-Type': 'application/json'})
        await response.prepare(request)
        for line in lines:
            await response.write(json.dumps(line).encode() + b'\n')
        await response.write_eof()
        return response

    api.add_handler(KEX_PATH, stream)
    events = await _collect(client, send_initial_events=True)
    assert [event['type'] for event in events] == ['ADDED', 'BOOKMARK']
    assert events[1]['object']['metadata']['annotations'] == {'k8s.io/initial-events-end': 'true'}


async def test_a_refused_streaming_list_is_a_client_error(api: FakeApi, client: AiohttpClient) -> None:
    status = {'kind': 'Status', 'code': 422, 'reason': 'Invalid',
              'message': 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'}
    api.add(KEX_PATH, status, status=422)
    with pytest.raises(clients.APIUnprocessableEntityError, match='sendInitialEvents'):
        await _collect(client, send_initial_events=True)
