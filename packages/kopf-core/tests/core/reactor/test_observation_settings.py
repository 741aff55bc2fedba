"""
``settings.scanning.disabled``: whether the CRDs are watched for resources appearing later.

The fake client offers one resource and records the watch requests (which never end).
"""
import asyncio
from typing import Any, AsyncIterator, List

import pytest

import kopf
from kopf._cogs.clients.protocols import ObjectPage
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs.references import Resource
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor import observation

RESOURCE = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)


class OneResourceClient:
    def __init__(self) -> None:
        self.watched: List[Resource] = []

    async def scan_resources(self, **_: Any) -> List[Resource]:
        return [RESOURCE]

    async def list_objects(self, resource: Resource, **_: Any) -> ObjectPage:
        return ObjectPage(items=[], resource_version='1')

    async def watch_objects(self, resource: Resource, **_: Any) -> AsyncIterator[typedefs.RawEvent]:
        self.watched.append(resource)
        await asyncio.Event().wait()
        yield typedefs.RawEvent(type='ADDED', object={})  # never reached


@pytest.mark.looptime
@pytest.mark.parametrize('disabled', [False, True])
async def test_crds_are_watched_unless_scanning_is_disabled(disabled: bool) -> None:
    registry = OperatorRegistry()

    @kopf.on.event('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def fn(**_: Any) -> None:
        pass

    settings = OperatorSettings()
    settings.scanning.disabled = disabled
    client = OneResourceClient()
    insights = observation.Insights()
    task = asyncio.create_task(observation.resource_observer(
        client=client, settings=settings, registry=registry, insights=insights))  # type: ignore[arg-type]
    await asyncio.sleep(10)
    assert insights.resources == {RESOURCE}  # scanned once at the start either way
    assert task.done() is disabled
    assert client.watched == ([] if disabled else [observation.CRDS])
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
