"""The bound's controller: its reconciliations on a fake API, and how it fails."""
import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from benchmarks.bare import FINALIZER, BareController
from benchmarks.kubeapi import ApiError, JsonDict, KubeApi


class FakeApi:
    """Lists the given objects, then watches nothing; records the patches, or fails them."""

    def __init__(self, items: list[JsonDict], *, failing: bool = False) -> None:
        self.items = items
        self.failing = failing
        self.patches: list[tuple[str, JsonDict, str]] = []

    async def list(self, plural: str, namespace: str) -> tuple[list[JsonDict], str]:
        return self.items, '1'

    async def watch(self, plural: str, namespace: str, resource_version: str) -> AsyncIterator[JsonDict]:
        await asyncio.Event().wait()  # nothing changes
        yield {}

    async def patch(self, plural: str, namespace: str, name: str, body: JsonDict, subresource: str = '') -> Any:
        if self.failing:
            raise ApiError(500, 'the server is down')
        self.patches.append((name, body, subresource))
        return {}


def controller(api: FakeApi) -> BareController:
    return BareController(cast(KubeApi, api), plural='benchmarkeds', namespace='ns', status_subresource=True)


def item(name: str) -> JsonDict:
    return {'metadata': {'name': name}, 'spec': {'field': 'x'}}


async def test_the_listed_objects_get_the_finalizer_and_the_result() -> None:
    api = FakeApi([item('a')])
    task = asyncio.create_task(controller(api).run())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert api.patches == [
        ('a', {'metadata': {'finalizers': [FINALIZER]}}, ''),
        ('a', {'status': {'create_fn': {'message': 'created'}, 'handled': {'field': 'x'}}}, 'status'),
    ]


async def test_a_failed_reconciliation_ends_the_run_with_its_error() -> None:
    api = FakeApi([item('a'), item('b')], failing=True)
    with pytest.raises(ApiError, match='the server is down'):
        await asyncio.wait_for(controller(api).run(), timeout=5)
