"""
The observation's own streams (CRDs, namespaces) as ``settings.watching`` shapes them.

Kopf applies the watching selectors and the chunk size to the namespaces and
the CRDs too (intentionally: a label selector on namespaces can hide some from
the operator). The fake client lists the namespaces given and records requests.
"""
import asyncio
from typing import Any, AsyncIterator, Dict, List

import pytest

import kopf
from kopf._cogs.clients.protocols import ObjectPage
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs.references import Resource
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor import observation

RESOURCE = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)


class RecordingClient:
    def __init__(self, namespaces: List[str]) -> None:
        self.namespaces = namespaces
        self.lists: List[Dict[str, Any]] = []
        self.watches: List[Dict[str, Any]] = []

    async def scan_resources(self, **_: Any) -> List[Resource]:
        return [RESOURCE]

    async def list_objects(self, resource: Resource, **kwargs: Any) -> ObjectPage:
        self.lists.append({'resource': resource, **kwargs})
        items = [{'metadata': {'name': name, 'uid': name, 'resourceVersion': '1'}} for name in self.namespaces]
        return ObjectPage(items=items if resource == observation.NAMESPACES else [], resource_version='1')

    async def watch_objects(self, resource: Resource, **kwargs: Any) -> AsyncIterator[typedefs.RawEvent]:
        self.watches.append({'resource': resource, **kwargs})
        await asyncio.Event().wait()
        yield typedefs.RawEvent(type='ADDED', object={})  # never reached


async def observe_namespaces(client: RecordingClient, settings: OperatorSettings) -> observation.Insights:
    insights = observation.Insights()
    task = asyncio.create_task(observation.namespace_observer(
        client=client, settings=settings, clusterwide=False, patterns=['ns-*'],  # type: ignore[arg-type]
        insights=insights))
    try:
        await asyncio.wait_for(insights.ready_namespaces.wait(), 1)
        await asyncio.sleep(0.1)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return insights


async def test_the_namespaces_are_listed_and_watched_with_their_selectors_and_chunks() -> None:
    settings = OperatorSettings()
    settings.watching.label_selectors['namespaces'] = 'team=a'
    settings.watching.field_selectors['v1/namespaces'] = 'metadata.name!=ns-x'
    settings.watching.chunk_size = 7
    client = RecordingClient(['ns-1', 'ns-2', 'other'])
    insights = await observe_namespaces(client, settings)
    assert insights.namespaces == {'ns-1', 'ns-2'}
    assert (client.lists[0]['label_selector'], client.lists[0]['field_selector']) == ('team=a', 'metadata.name!=ns-x')
    assert client.lists[0]['limit'] == 7
    assert client.watches[0]['label_selector'] == 'team=a'


async def test_the_namespaces_are_ready_even_if_the_selectors_leave_none_visible() -> None:
    settings = OperatorSettings()
    settings.watching.label_selectors['namespaces'] = 'no-such-label'
    insights = await observe_namespaces(RecordingClient([]), settings)
    assert insights.ready_namespaces.is_set()
    assert insights.namespaces == frozenset()


@pytest.mark.looptime
async def test_the_crds_are_listed_and_watched_with_their_selectors_and_chunks() -> None:
    registry = OperatorRegistry()

    @kopf.on.event('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def fn(**_: Any) -> None:
        pass

    settings = OperatorSettings()
    settings.watching.label_selectors['customresourcedefinitions'] = 'owner=us'
    settings.watching.chunk_size = 3
    client = RecordingClient([])
    task = asyncio.create_task(observation.resource_observer(
        client=client, settings=settings, registry=registry,  # type: ignore[arg-type]
        insights=observation.Insights()))
    await asyncio.sleep(1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    crd_lists = [request for request in client.lists if request['resource'] == observation.CRDS]
    crd_watches = [request for request in client.watches if request['resource'] == observation.CRDS]
    assert [(request['label_selector'], request['limit']) for request in crd_lists] == [('owner=us', 3)]
    assert [request['label_selector'] for request in crd_watches] == ['owner=us']
