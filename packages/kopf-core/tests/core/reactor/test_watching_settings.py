"""
``settings.watching.server_timeout`` and ``reconnect_backoff``: what the watch requests ask for, and when.

A fake client lists nothing and serves watch requests that end at once; it
records each request's ``timeout_seconds`` and loop time (looptime).
"""
import asyncio
from typing import Any, AsyncIterator, List, Optional, Tuple

import pytest

from kopf._cogs.clients.protocols import ObjectPage
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs.references import Resource
from kopf._core.reactor import watching

RESOURCE = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)


class EndingWatchesClient:
    def __init__(self) -> None:
        self.watches: List[Tuple[float, Optional[float]]] = []

    async def list_objects(self, resource: Resource, **_: Any) -> ObjectPage:
        return ObjectPage(items=[], resource_version='100')

    async def watch_objects(self, resource: Resource, *, timeout_seconds: Optional[float] = None,
                            **_: Any) -> AsyncIterator[typedefs.RawEvent]:
        self.watches.append((asyncio.get_running_loop().time(), timeout_seconds))
        no_events: List[typedefs.RawEvent] = []  # the server closes the stream at once
        for event in no_events:
            yield event


async def watch_for(settings: OperatorSettings, seconds: float) -> List[Tuple[float, Optional[float]]]:
    client = EndingWatchesClient()

    async def consume() -> None:
        async for _ in watching.continuous_watch(client=client, settings=settings,  # type: ignore[arg-type]
                                                 resource=RESOURCE, namespace=None):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return client.watches


@pytest.mark.looptime(start=0)
@pytest.mark.parametrize('backoff, expected_times', [
    pytest.param(1.0, [0, 1, 2, 3], id='1s'),
    pytest.param(2.0, [0, 2], id='2s'),
])
async def test_ended_watches_are_repeated_after_the_reconnect_backoff(
        backoff: float, expected_times: List[float]) -> None:
    settings = OperatorSettings()
    settings.watching.reconnect_backoff = backoff
    watches = await watch_for(settings, 3.5)
    assert [when for when, _ in watches] == expected_times


@pytest.mark.looptime(start=0)
@pytest.mark.parametrize('server_timeout', [None, 300])
async def test_watches_ask_the_server_for_the_server_timeout(server_timeout: Optional[float]) -> None:
    settings = OperatorSettings()
    settings.watching.server_timeout = server_timeout
    watches = await watch_for(settings, 0.5)
    assert watches and {timeout for _, timeout in watches} == {server_timeout}
