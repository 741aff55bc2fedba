"""
The listing and the watching as ``settings.watching`` shapes them: chunks, streaming lists, selectors, shards.

A scripted fake client records what each list and watch request asks for
(the protocol's keyword arguments) and serves the pages and watch-streams given;
once its streams are used up, a watch stays open with nothing, as a quiet server's.
"""
import asyncio
import logging
import random
import uuid
from typing import Any, AsyncGenerator, AsyncIterator, Dict, List, Optional, Sequence, Union, cast

import pytest

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs import references, shards
from kopf._core.reactor import watching

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
OTHER = references.Resource('', 'v1', 'namespaces', kind='Namespace', namespaced=False)
LOWER = shards.format_range('object.metadata.uid', 0, 1 << 63)
END = {'type': 'BOOKMARK', 'object': {'metadata': {'resourceVersion': '50',
                                                   'annotations': {protocols.INITIAL_EVENTS_END: 'true'}}}}
Stream = Sequence[Union[Dict[str, Any], Exception]]


def obj(name: str, rv: str = '1') -> Dict[str, Any]:
    # Random-looking uids, as the API server's (FNV-1a spreads similar short strings poorly), but reproducible.
    uid = str(uuid.UUID(int=random.Random(name).getrandbits(128), version=4))
    return {'metadata': {'name': name, 'uid': uid, 'resourceVersion': rv}}


class ScriptedClient:
    def __init__(self, pages: Sequence[protocols.ObjectPage] = (), streams: Sequence[Stream] = ()) -> None:
        self.pages = list(pages) or [protocols.ObjectPage(items=[], resource_version='10')]
        self.streams = list(streams)
        self.lists: List[Dict[str, Any]] = []
        self.watches: List[Dict[str, Any]] = []

    async def list_objects(self, resource: references.Resource, **kwargs: Any) -> protocols.ObjectPage:
        self.lists.append(kwargs)
        token = kwargs.get('continue_token')
        return self.pages[int(token) if token else 0]

    async def watch_objects(self, resource: references.Resource, **kwargs: Any) -> AsyncIterator[Any]:
        self.watches.append(kwargs)
        for item in (self.streams.pop(0) if self.streams else []):
            if isinstance(item, Exception):
                raise item
            yield item
        if not self.streams:
            await asyncio.Event().wait()


async def collect(client: ScriptedClient, settings: OperatorSettings, count: int, *,
                  resource: references.Resource = RESOURCE,
                  on_listed: Optional[asyncio.Event] = None) -> List[Dict[str, Any]]:
    settings.watching.reconnect_backoff = 0
    events = cast(AsyncGenerator[Any, None], watching.continuous_watch(
        client=client, settings=settings, resource=resource, namespace=None,  # type: ignore[arg-type]
        on_listed=on_listed))
    collected: List[Dict[str, Any]] = []
    try:
        while len(collected) < count:
            collected.append(dict(await asyncio.wait_for(events.__anext__(), 1)))
        # Let the stream go on to its next request, and see that nothing more (e.g. a duplicate) comes.
        with pytest.raises(asyncio.TimeoutError):
            collected.append(dict(await asyncio.wait_for(events.__anext__(), 0.1)))
    finally:
        await events.aclose()
    return collected


def summary(events: List[Dict[str, Any]]) -> List[tuple[Optional[str], str]]:
    return [(event['type'], event['object']['metadata']['name']) for event in events]


# --- Chunks ---

async def test_the_listing_is_whole_by_default() -> None:
    client = ScriptedClient()
    await collect(client, OperatorSettings(), 0)
    assert [request['limit'] for request in client.lists] == [None]


async def test_the_listing_goes_in_chunks_of_the_chunk_size() -> None:
    client = ScriptedClient(pages=[
        protocols.ObjectPage(items=[obj('a'), obj('b')], resource_version='10', continue_token='1'),
        protocols.ObjectPage(items=[obj('c')], resource_version='10'),
    ])
    settings = OperatorSettings()
    settings.watching.chunk_size = 2
    events = await collect(client, settings, 3)
    assert summary(events) == [(None, 'a'), (None, 'b'), (None, 'c')]
    assert [(request['limit'], request['continue_token']) for request in client.lists] == [(2, None), (2, '1')]
    assert client.watches[0]['resource_version'] == '10'


# --- Selectors ---

async def test_label_and_field_selectors_of_all_matching_keys_go_with_lists_and_watches() -> None:
    settings = OperatorSettings()
    settings.watching.label_selectors['kopfexamples'] = 'tier=web'
    settings.watching.label_selectors['KopfExample'] = 'app'
    settings.watching.label_selectors['namespaces'] = 'unrelated'
    settings.watching.field_selectors['kopfexamples'] = 'metadata.name=a'
    client = ScriptedClient()
    await collect(client, settings, 0)
    for request in (client.lists[0], client.watches[0]):
        assert request['label_selector'] == 'app,tier=web'
        assert request['field_selector'] == 'metadata.name=a'
        assert request['shard_selector'] is None


async def test_the_first_matching_shard_selector_goes_with_lists_and_watches() -> None:
    settings = OperatorSettings()
    settings.watching.shard_selectors['kopfexamples'] = LOWER
    settings.watching.shard_selectors['KopfExample'] = 'the second one is not used'
    client = ScriptedClient()
    await collect(client, settings, 0)
    assert client.lists[0]['shard_selector'] == LOWER
    assert client.watches[0]['shard_selector'] == LOWER


async def test_no_selectors_go_to_resources_that_no_key_matches() -> None:
    settings = OperatorSettings()
    settings.watching.label_selectors['kopfexamples'] = 'tier=web'
    client = ScriptedClient()
    await collect(client, settings, 0, resource=OTHER)
    assert client.lists[0]['label_selector'] is None and client.watches[0]['label_selector'] is None


# --- Shards ---

def split(names: Sequence[str]) -> tuple[List[str], List[str]]:
    selector = shards.parse(LOWER)
    inside = [name for name in names if selector.matches(obj(name))]
    return inside, [name for name in names if name not in inside]


NAMES = [f'obj{index}' for index in range(12)]


async def test_without_the_servers_shard_info_objects_outside_the_shard_are_dropped() -> None:
    inside, outside = split(NAMES)
    assert inside and outside  # the names must fall on both sides for the test to mean anything
    client = ScriptedClient(pages=[protocols.ObjectPage(items=[obj(name) for name in NAMES], resource_version='10')],
                            streams=[[{'type': 'ADDED', 'object': obj(name, '11')} for name in outside + inside]])
    settings = OperatorSettings()
    settings.watching.shard_selectors['kopfexamples'] = LOWER
    events = await collect(client, settings, 2 * len(inside))
    assert summary(events) == [(None, name) for name in inside] + [('ADDED', name) for name in inside]


async def test_with_the_servers_shard_info_the_listed_objects_are_trusted() -> None:
    _, outside = split(NAMES)
    page = protocols.ObjectPage(items=[obj(outside[0])], resource_version='10', shard_selector=LOWER)
    client = ScriptedClient(pages=[page])
    settings = OperatorSettings()
    settings.watching.shard_selectors['kopfexamples'] = LOWER
    events = await collect(client, settings, 1)
    assert summary(events) == [(None, outside[0])]  # the server's filtering is not second-guessed


async def test_an_invalid_shard_selector_fails_the_stream_with_what_is_wrong() -> None:
    client = ScriptedClient(pages=[protocols.ObjectPage(items=[obj('a')], resource_version='10')])
    settings = OperatorSettings()
    settings.watching.shard_selectors['kopfexamples'] = "shardRange(object.metadata.uid, '0x0', '0x8')"
    with pytest.raises(shards.ShardSelectorError, match=r"16 lowercase hex digits"):
        await collect(client, settings, 1)


# --- Streaming lists ---

async def test_a_streaming_list_replaces_the_listing_and_types_the_initial_events_none() -> None:
    client = ScriptedClient(streams=[[
        {'type': 'ADDED', 'object': obj('a')}, {'type': 'ADDED', 'object': obj('b')}, END,
        {'type': 'MODIFIED', 'object': obj('a', '51')},
    ]])
    settings = OperatorSettings()
    settings.watching.initial_streaming = True
    listed = asyncio.Event()
    events = await collect(client, settings, 3, on_listed=listed)
    assert summary(events) == [(None, 'a'), (None, 'b'), ('MODIFIED', 'a')]
    assert client.lists == []
    assert client.watches[0]['send_initial_events'] is True and client.watches[0]['resource_version'] is None
    assert listed.is_set()


async def test_a_streaming_list_is_continued_as_a_watch_from_its_end_bookmark() -> None:
    client = ScriptedClient(streams=[[{'type': 'ADDED', 'object': obj('a')}, END], [
        {'type': 'ADDED', 'object': obj('b', '52')}]])
    settings = OperatorSettings()
    settings.watching.initial_streaming = True
    events = await collect(client, settings, 2)
    assert summary(events) == [(None, 'a'), ('ADDED', 'b')]
    assert (client.watches[1]['resource_version'], client.watches[1]['send_initial_events']) == ('50', False)


async def test_a_streaming_list_broken_before_its_end_starts_over_without_repeating_objects() -> None:
    client = ScriptedClient(streams=[
        [{'type': 'ADDED', 'object': obj('a')}, OSError('connection reset')],
        [{'type': 'ADDED', 'object': obj('a')}, {'type': 'ADDED', 'object': obj('b')}, END],
    ])
    settings = OperatorSettings()
    settings.watching.initial_streaming = True
    listed = asyncio.Event()
    events = await collect(client, settings, 2, on_listed=listed)
    assert summary(events) == [(None, 'a'), (None, 'b')]
    assert [watch['send_initial_events'] for watch in client.watches] == [True, True]
    assert listed.is_set()


async def test_streaming_lists_refused_by_the_server_fall_back_to_listing(caplog: pytest.LogCaptureFixture) -> None:
    refusal = apierrors.APIUnprocessableEntityError(
        {'code': 422, 'reason': 'Invalid', 'message': 'sendInitialEvents: Forbidden: sendInitialEvents is '
                                                      'forbidden for watch unless the WatchList feature gate is '
                                                      'enabled'}, status=422)
    client = ScriptedClient(pages=[protocols.ObjectPage(items=[obj('a')], resource_version='10')],
                            streams=[[refusal]])
    settings = OperatorSettings()
    settings.watching.initial_streaming = True
    caplog.set_level(logging.WARNING)
    events = await collect(client, settings, 1)
    assert summary(events) == [(None, 'a')]
    assert len(client.lists) == 1
    assert [watch['send_initial_events'] for watch in client.watches] == [True, False]
    assert 'refuses streaming lists' in caplog.text


async def test_other_refusals_of_a_streaming_list_are_not_mistaken_for_no_streaming() -> None:
    refusal = apierrors.APIClientError({'code': 400, 'message': 'unable to parse requirement'}, status=400)
    client = ScriptedClient(streams=[[refusal]])
    settings = OperatorSettings()
    settings.watching.initial_streaming = True
    with pytest.raises(apierrors.APIClientError, match='unable to parse'):
        await collect(client, settings, 1)


async def test_a_streaming_re_list_after_gone_reports_changes_and_deletions() -> None:
    client = ScriptedClient(streams=[
        [{'type': 'ADDED', 'object': obj('a')}, {'type': 'ADDED', 'object': obj('b')}, END,
         apierrors.APIGoneError({'code': 410}, status=410)],
        [{'type': 'ADDED', 'object': obj('a', '60')}, END],
    ])
    settings = OperatorSettings()
    settings.watching.initial_streaming = True
    events = await collect(client, settings, 4)
    assert summary(events) == [(None, 'a'), (None, 'b'), ('MODIFIED', 'a'), ('DELETED', 'b')]


# --- Bookmarks ---

class Disconnected(Exception):
    """A transport error of a client library: neither an API error nor an OSError."""


@pytest.mark.looptime
async def test_a_bookmark_alone_proves_a_broken_stream_works_again(caplog: pytest.LogCaptureFixture) -> None:
    bookmark = {'type': 'BOOKMARK', 'object': {'metadata': {'resourceVersion': '20'}}}
    client = ScriptedClient(streams=[[Disconnected('cut')], [bookmark]])
    caplog.set_level(logging.INFO)

    async def consume() -> None:
        async for _ in watching.continuous_watch(client=client, settings=OperatorSettings(),  # type: ignore[arg-type]
                                                 resource=RESOURCE, namespace=None):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert 'Failed to stream' in caplog.text
    assert 'Succeeded to stream kopfexamples.v1.kopf.dev cluster-wide after 1 failure(s).' in caplog.text
