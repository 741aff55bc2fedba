"""The in-memory watches' edges that the conformance suite cannot reach on a real server in a test's time."""
import asyncio
from typing import Any

import pytest

from kopf import clients
from kopf_testing import crd_manifest
from kopf_testing.memory import MemoryApi, MemoryClient, MemoryKube


@pytest.fixture
def api() -> MemoryApi:
    api = MemoryApi()
    MemoryKube(api).apply_crd(crd_manifest('watching.kopf.dev', 'widgets', 'Widget'))
    return api


def widget(name: str) -> dict[str, Any]:
    return {'apiVersion': 'watching.kopf.dev/v1', 'kind': 'Widget', 'metadata': {'name': name}}


async def test_silence_longer_than_the_inactivity_timeout_ends_the_watch(api: MemoryApi) -> None:
    client = MemoryClient(api, inactivity_timeout=0.05)
    widgets = api.served_by_name('widgets').resource
    with pytest.raises(asyncio.TimeoutError):
        async for _ in client.watch_objects(widgets, namespace='default', resource_version=None):
            pass


async def test_a_watch_without_bookmarks_ends_silently_at_its_timeout(api: MemoryApi) -> None:
    widgets = api.served_by_name('widgets').resource
    events = [event async for event in MemoryClient(api).watch_objects(
        widgets, namespace='default', timeout_seconds=0.05, allow_bookmarks=False)]
    assert events == []


async def test_compaction_expires_older_versions_for_watches_and_continued_lists(api: MemoryApi) -> None:
    client = MemoryClient(api)
    widgets = api.served_by_name('widgets').resource
    for name in ['a', 'b']:
        await client.create_object(widgets, namespace='default', body=widget(name))
    page = await client.list_objects(widgets, namespace='default', limit=1)
    await client.create_object(widgets, namespace='default', body=widget('c'))
    api.compact()  # at the latest version: the list's version is now older than anything kept
    with pytest.raises(clients.APIGoneError):
        await client.list_objects(widgets, namespace='default', limit=1, continue_token=page.continue_token)
    with pytest.raises(clients.APIGoneError):
        async for _ in client.watch_objects(widgets, namespace='default', resource_version=page.resource_version):
            pass
    fresh = await client.list_objects(widgets, namespace='default')
    assert [item['metadata']['name'] for item in fresh.items] == ['a', 'b', 'c']


async def test_dependents_are_deleted_with_their_last_owner(api: MemoryApi) -> None:
    client = MemoryClient(api)
    widgets = api.served_by_name('widgets').resource
    owner = await client.create_object(widgets, namespace='default', body=widget('owner'))
    child = widget('child')
    child['metadata']['ownerReferences'] = [{'apiVersion': 'watching.kopf.dev/v1', 'kind': 'Widget',
                                             'name': 'owner', 'uid': owner['metadata']['uid']}]
    await client.create_object(widgets, namespace='default', body=child)
    await client.delete_object(widgets, namespace='default', name='owner')
    page = await client.list_objects(widgets, namespace='default')
    assert page.items == []
