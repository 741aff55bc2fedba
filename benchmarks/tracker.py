"""
What the harness sees of the objects: one LIST and one WATCH, kept open for a whole session.

Waiting by watching (not by polling lists) is cheap for the API server, so it
does not slow down the operator being measured, and it is exact in time: a
phase ends at the watch event that makes its condition true.
"""
import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Collection
from typing import Any

from benchmarks.kubeapi import ApiError, JsonDict, KubeApi


@dataclasses.dataclass(frozen=True)
class ObjectState:
    """The parts of an object that the phases wait for: the handlers' visible results."""
    created: bool  # status.create_fn is present
    updated_field: object  # status.update_fn.field, or None (a handler with a field filter has it in its id)
    deleting: bool
    finalized: bool = False  # any finalizer is present (the operator's first step with a new object)

    @classmethod
    def of(cls, body: JsonDict) -> 'ObjectState':
        status: dict[str, Any] = body.get('status') or {}
        update_result = status.get('update_fn', status.get('update_fn/spec.field'))
        return cls(
            created=isinstance(status.get('create_fn'), dict),
            updated_field=update_result.get('field') if isinstance(update_result, dict) else None,
            deleting=bool(body.get('metadata', {}).get('deletionTimestamp')),
            finalized=bool(body.get('metadata', {}).get('finalizers')),
        )


class ObjectTracker:
    """
    The current state of every object in a namespace, and the time of the last change of any.

    Per object, it also keeps when the object appeared and when its create handler's result first
    showed: the latency of the handling as the user sees it, on one clock, with no requests of its own.
    """

    def __init__(self, api: KubeApi, plural: str, namespace: str) -> None:
        self.api = api
        self.plural = plural
        self.namespace = namespace
        self.states: dict[str, ObjectState] = {}
        self.appeared: dict[str, float] = {}  # the monotonic time when the object was first seen
        self.creation_done: dict[str, float] = {}  # ... and when its status.create_fn first showed
        self.finalizer_added: dict[str, float] = {}  # ... and when a finalizer first showed
        self.last_event_time = 0.0
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._notifier: asyncio.Task[None] | None = None

    async def __aenter__(self) -> 'ObjectTracker':
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def start(self) -> None:
        resource_version = await self._relist()
        self._task = asyncio.create_task(self._watch(resource_version))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def wait_for(self, condition: Callable[[dict[str, ObjectState]], bool], *, timeout: float) -> float:
        """Wait until the condition holds for the objects; return the monotonic time when it became true."""
        called = time.monotonic()
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: self._check(condition)), timeout=timeout)
        return max(self.last_event_time, called)

    def _check(self, condition: Callable[[dict[str, ObjectState]], bool]) -> bool:
        if self._task is not None and self._task.done():
            self._task.result()  # the watch has failed: raise its error instead of waiting forever
        return condition(self.states)

    def creation_latencies(self, names: Collection[str]) -> list[float]:
        """For each object whose creation was handled: the seconds from its appearance to the handler's result."""
        return _intervals(self.appeared, self.creation_done, names)

    def finalizer_latencies(self, names: Collection[str]) -> list[float]:
        """For each object that got a finalizer: the seconds from its appearance to the finalizer (the first step)."""
        return _intervals(self.appeared, self.finalizer_added, names)

    async def _relist(self) -> str:
        items, resource_version = await self.api.list(self.plural, self.namespace)
        listed = {item['metadata']['name']: ObjectState.of(item) for item in items}
        for name in set(self.states) - set(listed):
            self._forget(name)
        for name, state in listed.items():
            self._store(name, state)
        self._note_change()
        return resource_version

    async def _watch(self, resource_version: str) -> None:
        while True:
            try:
                async for event in self.api.watch(self.plural, self.namespace, resource_version):
                    body = event.get('object', {})
                    if event.get('type') == 'ERROR':
                        raise ApiError(int(body.get('code', 500)), str(body.get('message')))
                    resource_version = body.get('metadata', {}).get('resourceVersion', resource_version)
                    if event.get('type') == 'BOOKMARK':
                        continue
                    name = body['metadata']['name']
                    if event.get('type') == 'DELETED':
                        self._forget(name)
                    else:
                        self._store(name, ObjectState.of(body))
                    self._note_change()
            except ApiError as e:
                if e.status != 410:
                    raise
                resource_version = await self._relist()  # the history is compacted: start over from a list

    def _store(self, name: str, state: ObjectState) -> None:
        now = time.monotonic()
        previous = self.states.get(name)
        if previous is None:
            self.appeared[name] = now
        if state.created and (previous is None or not previous.created):
            self.creation_done[name] = now
        if state.finalized:
            self.finalizer_added.setdefault(name, now)  # the first one: not again after a release
        self.states[name] = state

    def _forget(self, name: str) -> None:
        self.states.pop(name, None)
        self.appeared.pop(name, None)
        self.creation_done.pop(name, None)
        self.finalizer_added.pop(name, None)

    def _note_change(self) -> None:
        """
        Remember the time of the change; wake up the waiters once for all the changes received together.

        The events of one network read are processed with no pause in between, so the conditions
        (which look at every object) are checked once per read, not once per event: with thousands
        of objects, that is the difference between a negligible and a noticeable load on the harness.
        """
        self.last_event_time = time.monotonic()
        if self._notifier is None or self._notifier.done():
            self._notifier = asyncio.create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


def _intervals(starts: dict[str, float], ends: dict[str, float], names: Collection[str]) -> list[float]:
    return [ends[name] - starts[name] for name in names if name in ends and name in starts]


def all_created(names: Collection[str]) -> Callable[[dict[str, ObjectState]], bool]:
    return lambda states: all(name in states and states[name].created for name in names)


def all_updated(names: Collection[str], value: object) -> Callable[[dict[str, ObjectState]], bool]:
    return lambda states: all(name in states and states[name].updated_field == value for name in names)


def all_gone(names: Collection[str]) -> Callable[[dict[str, ObjectState]], bool]:
    return lambda states: not any(name in states for name in names)
