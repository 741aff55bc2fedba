"""
Fakes for the engines' tests: the API server's Leases at the client seam (get, create, merge-patch, watch).

It keeps the API server's rules that the leader election relies upon: a new
``resourceVersion`` on every write, a merge-patch carrying an outdated
``resourceVersion`` refused with 409, creating an existing Lease refused with
409, a merge-patch's ``null`` removing a field. It can refuse everything (403),
or stop answering (requests hang, as with a cut-off network), and the watchers
get every change as the API server would send it.
"""
import asyncio
import copy
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional

import pytest

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.structs import references


def merge(target: Dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping):
            merge(target.setdefault(key, {}), value)
        else:
            target[key] = value


class FakeLeaseApi:
    """The Leases of one fake API server; each replica gets its own client (which may be cut off)."""

    def __init__(self) -> None:
        self.leases: Dict[tuple[str, str], Dict[str, Any]] = {}
        self.version = 0
        self.watchers: List[asyncio.Queue[Dict[str, Any]]] = []
        self.writes: List[Dict[str, Any]] = []  # every accepted write: who, what, when (loop time)

    def client(self) -> 'FakeLeaseClient':
        """A new connection, as of another replica."""
        return FakeLeaseClient(self)

    def put(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        """A Lease as if written by someone else (e.g. by hand)."""
        body = {'metadata': {'name': name, 'namespace': namespace}, 'spec': dict(spec)}
        self._store(namespace, name, body, 'MODIFIED' if (namespace, name) in self.leases else 'ADDED')

    def spec(self, namespace: str, name: str) -> Dict[str, Any]:
        return dict(self.leases[(namespace, name)]['spec'])

    def delete(self, namespace: str, name: str) -> None:
        body = self.leases.pop((namespace, name), None)
        if body is not None:
            self.version += 1
            for queue in self.watchers:
                queue.put_nowait({'type': 'DELETED', 'object': copy.deepcopy(body)})

    def _store(self, namespace: str, name: str, body: Dict[str, Any], kind: str) -> Dict[str, Any]:
        self.version += 1
        body['metadata']['resourceVersion'] = str(self.version)
        self.leases[(namespace, name)] = body
        self.writes.append({'type': kind, 'spec': dict(body['spec']), 'at': asyncio.get_running_loop().time()})
        for queue in self.watchers:
            queue.put_nowait({'type': kind, 'object': copy.deepcopy(body)})
        return copy.deepcopy(body)


class FakeLeaseClient:
    """One replica's connection to the fake API server."""

    def __init__(self, api: FakeLeaseApi) -> None:
        self.api = api
        self.cut_off = False  # every request hangs (and open watches go silent)
        self.forbidden = False  # every request is refused with 403
        self.requests: List[str] = []

    async def _enter(self, verb: str) -> None:
        self.requests.append(verb)
        if self.cut_off:
            await asyncio.Event().wait()
        if self.forbidden:
            raise apierrors.APIForbiddenError(
                {'message': f'leases.coordination.k8s.io is forbidden: cannot {verb} resource "leases"'},
                status=403)

    async def get_object(self, resource: references.Resource, *, namespace: str, name: str) -> Dict[str, Any]:
        await self._enter('get')
        if (namespace, name) not in self.api.leases:
            raise apierrors.APINotFoundError(status=404)
        return copy.deepcopy(self.api.leases[(namespace, name)])

    async def create_object(self, resource: references.Resource, *, namespace: str,
                            body: Mapping[str, Any]) -> Dict[str, Any]:
        await self._enter('create')
        name = body['metadata']['name']
        if (namespace, name) in self.api.leases:
            raise apierrors.APIConflictError(status=409)
        return self.api._store(namespace, name, copy.deepcopy(dict(body)), 'ADDED')

    async def patch_object(self, resource: references.Resource, *, namespace: str, name: str,
                           patch: Mapping[str, Any], **_: Any) -> Dict[str, Any]:
        await self._enter('patch')
        if (namespace, name) not in self.api.leases:
            raise apierrors.APINotFoundError(status=404)
        body = copy.deepcopy(self.api.leases[(namespace, name)])
        wanted = (patch.get('metadata') or {}).get('resourceVersion')
        if wanted is not None and wanted != body['metadata']['resourceVersion']:
            raise apierrors.APIConflictError(status=409)
        merge(body, patch)
        return self.api._store(namespace, name, body, 'MODIFIED')

    async def watch_objects(self, resource: references.Resource, *, namespace: str,
                            field_selector: Optional[str] = None, label_selector: Optional[str] = None,
                            **_: Any) -> AsyncIterator[Dict[str, Any]]:
        await self._enter('watch')
        queue: asyncio.Queue[Dict[str, Any]] = asyncio.Queue()
        for (ns, _name), body in self.api.leases.items():
            if ns == namespace:
                queue.put_nowait({'type': 'ADDED', 'object': copy.deepcopy(body)})
        self.api.watchers.append(queue)
        try:
            while True:
                event = await queue.get()
                if self.cut_off:
                    await asyncio.Event().wait()  # the stream goes silent for good
                metadata = event['object']['metadata']
                label, _sep, value = (label_selector or '').partition('=')
                named = field_selector is None or field_selector == f"metadata.name={metadata['name']}"
                labelled = not label or (metadata.get('labels') or {}).get(label) == value
                if named and labelled:
                    yield event
        finally:
            self.api.watchers.remove(queue)


@pytest.fixture
def lease_api() -> FakeLeaseApi:
    return FakeLeaseApi()
