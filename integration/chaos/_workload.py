"""
The workload of a soak: objects created, updated several times and deleted, in overlapping waves.

Each object goes through its life in its own task: created with ``value: 0``,
then updated to 1, 2, ... and deleted. Before each next step, it waits until
the operator has stored that state as handled (its last-handled-configuration
annotation has the value, or the object is gone), so that each value is a
distinct change for the operator to handle rather than one coalesced with the
next. A wait that runs out is journaled and the object moves on: the checks
at the end then find the change lost.

What is seen of the objects comes from one watch of the harness (``Observer``),
not from polling each object.
"""
import asyncio
import json
import random
import time
from collections.abc import Sequence
from typing import Any

from . import _api, _records
from ._resource import GROUP, KIND, PLURAL, VERSION

DIFFBASE = 'kopf.zalando.org/last-handled-configuration'


class Observer:
    """The objects of the namespace as the API server has them, kept current by a list-and-watch loop."""

    def __init__(self, api: _api.Api, namespace: str) -> None:
        self._api = api
        self._path = f'/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}'
        self.objects: dict[str, dict[str, Any]] = {}
        self._changed = asyncio.Condition()

    async def run(self) -> None:
        while True:
            try:
                await self._list_and_watch()
            except Exception:  # whatever broke, a fresh list repairs it
                await asyncio.sleep(1)  # the API server is restarting: start over with a fresh list

    async def _list_and_watch(self) -> None:
        status, body = await self._api.request('GET', self._path)
        if status != 200:
            raise ValueError(f'Listing answered {status}: {body}')
        await self._replace({item['metadata']['name']: item for item in body['items']})
        version = body['metadata']['resourceVersion']
        url = f'{self._api.server}{self._path}?watch=true&allowWatchBookmarks=true&resourceVersion={version}'
        async with self._api.session.get(url, timeout=None) as response:
            if response.status != 200:
                raise ValueError(f'Watching answered {response.status}')
            async for line in response.content:
                event = json.loads(line)
                if event['type'] == 'ERROR':
                    return
                if event['type'] == 'BOOKMARK':
                    continue
                await self._apply(event['type'], event['object'])

    async def _replace(self, objects: dict[str, dict[str, Any]]) -> None:
        async with self._changed:
            self.objects = objects
            self._changed.notify_all()

    async def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        async with self._changed:
            if kind == 'DELETED':
                self.objects.pop(obj['metadata']['name'], None)
            else:
                self.objects[obj['metadata']['name']] = obj
            self._changed.notify_all()

    def handled_value(self, name: str) -> Any:
        obj = self.objects.get(name)
        diffbase = (obj or {}).get('metadata', {}).get('annotations', {}).get(DIFFBASE)
        return None if diffbase is None else json.loads(diffbase).get('spec', {}).get('value')

    async def wait(self, predicate: Any, timeout: float) -> bool:
        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(predicate), timeout=timeout)
        except asyncio.TimeoutError:
            return False
        return True


class Workload:
    def __init__(self, api: _api.Api, observer: Observer, namespace: str, journal: Any, *,
                 updates: int, wait_timeout: float) -> None:
        self._api = api
        self._observer = observer
        self._path = f'/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}'
        self._journal = journal
        self._updates = updates
        self._wait_timeout = wait_timeout

    async def run(self, names: Sequence[str], *, spread: float, waves: int, seed: int,
                  concurrency: int = 100) -> None:
        """Start the objects' lives in ``waves`` waves over ``spread`` seconds; return when all have ended."""
        rng = random.Random(seed)
        limit = asyncio.Semaphore(concurrency)
        started = time.monotonic()
        waves = max(1, min(waves, len(names)))
        tasks = []
        for index, name in enumerate(names):
            wave = index * waves // len(names)
            start_at = spread * wave / waves + rng.uniform(0, spread / waves / 4)
            pauses = [rng.uniform(0.5, 3.0) for _ in range(self._updates + 1)]
            tasks.append(asyncio.create_task(self._live(name, started + start_at, pauses, limit)))
        await asyncio.gather(*tasks)

    async def _live(self, name: str, start_at: float, pauses: list[float], limit: asyncio.Semaphore) -> None:
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        async with limit:
            await self._create(name)
            await self._await_handled(name, 0)
            for value in range(1, self._updates + 1):
                await asyncio.sleep(pauses[value])
                await self._update(name, value)
                await self._await_handled(name, value)
            await asyncio.sleep(pauses[0])
            await self._delete(name)
            if not await self._observer.wait(lambda: name not in self._observer.objects, self._wait_timeout):
                _records.append(self._journal, event='timeout', obj=name, step='deletion')

    async def _create(self, name: str) -> None:
        manifest = {'apiVersion': f'{GROUP}/{VERSION}', 'kind': KIND,
                    'metadata': {'name': name}, 'spec': {'value': 0}}
        status, body = await self._api.request('POST', self._path, manifest)
        if status not in (201, 409):  # 409: it was created before the connection broke
            raise _api.ApiError(f'Creating {name} answered {status}: {body}')
        _records.append(self._journal, event='created', obj=name, value=0)

    async def _update(self, name: str, value: int) -> None:
        status, body = await self._api.request('PATCH', f'{self._path}/{name}', {'spec': {'value': value}},
                                               content_type='application/merge-patch+json')
        if status != 200:
            raise _api.ApiError(f'Updating {name} answered {status}: {body}')
        _records.append(self._journal, event='updated', obj=name, value=value)

    async def _delete(self, name: str) -> None:
        status, body = await self._api.request('DELETE', f'{self._path}/{name}')
        if status not in (200, 202, 404):
            raise _api.ApiError(f'Deleting {name} answered {status}: {body}')
        _records.append(self._journal, event='deleted', obj=name)

    async def _await_handled(self, name: str, value: int) -> None:
        if not await self._observer.wait(lambda: self._observer.handled_value(name) == value, self._wait_timeout):
            _records.append(self._journal, event='timeout', obj=name, step=f'value={value}')
