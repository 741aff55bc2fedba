"""
kopf-core's client protocol over the in-memory API, and the driver that plugs it into an operator::

    api = MemoryApi()
    await kopf.operator(client=MemoryDriver(api), ...)

The client behaves as kopf-client does towards the framework: no request
without credentials in the vault (it waits for the login), the same errors
for the same failures, deletion of an absent object is not an error, and a
watch ends when its ``timeout_seconds`` is over (with a BOOKMARK 2 seconds
before that, as the API server's watch cache sends it, if bookmarks are
allowed) or with ``asyncio.TimeoutError`` after ``settings.watching.inactivity_timeout``.
"""
import asyncio
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from typing import Any, Optional, Union

from kopf import clients
from kopf_testing.memory._store import MemoryApi

SERVER = 'memory://kopf-testing'
_BOOKMARK_BEFORE_END = 2.0
_BOOKMARK_INTERVAL = 60.0  # without a timeout, as often as the API server's watch cache sends them


class MemoryClient:
    """An :class:`kopf.clients.ApiClient` that reads and writes a :class:`MemoryApi`."""

    def __init__(
            self,
            api: MemoryApi,
            *,
            vault: Optional[clients.Vault] = None,
            inactivity_timeout: Optional[float] = None,
    ) -> None:
        self.api = api
        self._vault = vault
        self._inactivity_timeout = inactivity_timeout
        self._closed = False

    async def _enter(self) -> None:
        """
        As kopf-client does before each request: refuse it after :meth:`close`, and
        wait for the credentials in the vault (if given), failing with
        :class:`kopf.LoginError` if the last login produced none.
        """
        if self._closed:
            raise RuntimeError("The API client is closed and cannot make requests anymore.")
        if self._vault is not None:
            await self._vault.select()

    async def scan_resources(self, *, groups: Optional[Collection[str]] = None) -> Collection[clients.Resource]:
        await self._enter()
        return self.api.scan(groups)

    async def get_object(self, resource: clients.Resource, *, namespace: clients.Namespace,
                         name: str) -> clients.RawBody:
        await self._enter()
        return self.api.get(resource, namespace, name)

    async def list_objects(self, resource: clients.Resource, *, namespace: clients.Namespace,
                           limit: Optional[int] = None, continue_token: Optional[str] = None,
                           label_selector: Optional[str] = None, field_selector: Optional[str] = None,
                           shard_selector: Optional[str] = None) -> clients.ObjectPage:
        await self._enter()
        items, resource_version, token = self.api.list(resource, namespace, limit=limit,
                                                       continue_token=continue_token, label_selector=label_selector,
                                                       field_selector=field_selector, shard_selector=shard_selector)
        applied = shard_selector if shard_selector and self.api.sharded_watches else None  # its shardInfo
        return clients.ObjectPage(items=items, resource_version=resource_version,
                                  continue_token=token, shard_selector=applied)

    async def create_object(self, resource: clients.Resource, *, namespace: clients.Namespace,
                            body: Mapping[str, Any], backoffs: Optional[Iterable[float]] = None) -> clients.RawBody:
        await self._enter()
        # The in-memory API never fails for the network, so it has nothing to retry: no back-offs to use.
        return self.api.create(resource, namespace, body)

    async def patch_object(self, resource: clients.Resource, *, namespace: clients.Namespace, name: str,
                           patch: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
                           patch_type: clients.PatchType = clients.PatchType.MERGE,
                           subresource: Optional[str] = None) -> clients.RawBody:
        await self._enter()
        return self.api.patch(resource, namespace, name, patch, patch_type, subresource)

    async def delete_object(self, resource: clients.Resource, *, namespace: clients.Namespace, name: str,
                            propagation_policy: Optional[str] = None) -> None:
        await self._enter()
        try:
            self.api.delete(resource, namespace, name, propagation_policy=propagation_policy)
        except clients.APINotFoundError:
            pass  # already deleted: the desired state is reached (as kopf-client does)

    async def watch_objects(self, resource: clients.Resource, *, namespace: clients.Namespace,
                            resource_version: Optional[str] = None, timeout_seconds: Optional[float] = None,
                            allow_bookmarks: bool = True, label_selector: Optional[str] = None,
                            field_selector: Optional[str] = None, shard_selector: Optional[str] = None,
                            send_initial_events: bool = False) -> AsyncIterator[clients.RawEvent]:
        await self._enter()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[clients.RawEvent] = asyncio.Queue()
        watcher = self.api.subscribe(resource, namespace, resource_version, loop, queue,
                                     label_selector=label_selector, field_selector=field_selector,
                                     shard_selector=shard_selector, send_initial_events=send_initial_events)
        allow_bookmarks = allow_bookmarks or send_initial_events  # as kopf-client requests them
        try:
            end = loop.time() + timeout_seconds if timeout_seconds is not None else None
            bookmark_at = _next_bookmark_time(loop.time(), end)
            last_activity = loop.time()
            while True:
                now = loop.time()
                if end is not None and now >= end:
                    return
                if allow_bookmarks and now >= bookmark_at:
                    self.api.send_bookmark(watcher)
                    bookmark_at = _next_bookmark_time(now, end) if end is None else float('inf')
                deadlines = [end, bookmark_at if allow_bookmarks else None, self._inactive_at(last_activity)]
                pending = [deadline for deadline in deadlines if deadline is not None]
                try:
                    event = await asyncio.wait_for(queue.get(), max(0.0, min(pending) - now) if pending else None)
                    _raise_if_cancelling()
                except asyncio.TimeoutError:
                    inactive_at = self._inactive_at(last_activity)
                    if inactive_at is not None and loop.time() >= inactive_at:
                        raise
                    continue
                last_activity = loop.time()
                yield event
        finally:
            self.api.unsubscribe(watcher)

    def _inactive_at(self, last_activity: float) -> Optional[float]:
        return None if self._inactivity_timeout is None else last_activity + self._inactivity_timeout

    async def close(self) -> None:
        self._closed = True


def _raise_if_cancelling() -> None:
    """
    Re-raise a cancellation that ``asyncio.wait_for()`` has swallowed (as kopf-client does).

    Before Python 3.12, when an event arrives at the moment the watching task is cancelled,
    ``wait_for()`` returns the event and the cancellation is lost: the stopped watch would go on.
    """
    task = asyncio.current_task()
    cancelling = getattr(task, 'cancelling', None)  # Python 3.11+; 3.10 cannot tell
    if cancelling is not None and cancelling():
        raise asyncio.CancelledError()


def _next_bookmark_time(now: float, end: Optional[float]) -> float:
    return max(now, end - _BOOKMARK_BEFORE_END) if end is not None else now + _BOOKMARK_INTERVAL


class MemoryDriver:
    """The :class:`kopf.clients.ClientDriver` of one :class:`MemoryApi`: ``kopf.operator(client=driver)``."""

    def __init__(self, api: MemoryApi) -> None:
        self.api = api

    def create_client(self, *, vault: clients.Vault, settings: Any) -> MemoryClient:
        return MemoryClient(self.api, vault=vault, inactivity_timeout=settings.watching.inactivity_timeout)

    def default_login_fns(self) -> Sequence[Any]:
        return [login_to_memory]


def login_to_memory(**_: Any) -> clients.ConnectionInfo:
    """The in-memory API needs no credentials; the vault needs some to let the operator start."""
    return clients.ConnectionInfo(server=SERVER)
