"""
A minimal Kubernetes API client that counts its own requests as the API server does.

The harness creates, updates, deletes and watches objects itself, and the API
server's ``apiserver_request_total`` counts those requests together with the
operator's. So every request made here is tallied under the same verb and
resource that the API server reports (``LIST``, ``WATCH``, ``POST``, ...),
and the harness subtracts its tally from the server's deltas (see ``metrics.py``).
It deliberately uses none of the frameworks under test: only aiohttp.
"""
import asyncio
import collections
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

GROUP = 'bench.kopf.dev'
VERSION = 'v1'

Tally = collections.Counter[tuple[str, str]]  # (verb, "resource" or "resource/subresource") -> requests
JsonDict = dict[str, Any]


class ApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f'HTTP {status}: {text[:300]}')
        self.status = status


class KubeApi:
    """An aiohttp session bound to one API server and a bearer token; every request is tallied."""

    def __init__(self, server: str, *, token: str, ca_path: str, connections: int = 0) -> None:
        self.server = server.rstrip('/')
        self.connections = connections  # the most requests in flight (0: no limit)
        self.tally: Tally = collections.Counter()
        self._headers = {'Authorization': f'Bearer {token}'}
        self._ssl = ssl.create_default_context(cafile=ca_path)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> 'KubeApi':
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self._ssl, limit=self.connections)
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers, timeout=timeout)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- Custom resources of the benchmark's group ---

    def url(self, plural: str, namespace: str, name: str = '', subresource: str = '') -> str:
        parts = [f'/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}', name, subresource]
        return self.server + '/'.join(part for part in parts if part)

    async def list(self, plural: str, namespace: str) -> tuple[list[JsonDict], str]:
        """All objects of the namespace (in pages, each one a LIST) and the list's resourceVersion."""
        items: list[JsonDict] = []
        params = {'limit': '500'}
        while True:
            data = await self.request('GET', self.url(plural, namespace), verb='LIST', resource=plural, params=params)
            items.extend(data.get('items', []))
            token = data.get('metadata', {}).get('continue')
            if not token:
                return items, str(data.get('metadata', {}).get('resourceVersion', ''))
            params = {'limit': '500', 'continue': token}

    async def create(self, plural: str, namespace: str, body: Mapping[str, Any]) -> JsonDict:
        return await self.request('POST', self.url(plural, namespace), verb='POST', resource=plural, body=body)

    async def patch(self, plural: str, namespace: str, name: str, patch: Mapping[str, Any], *,
                    subresource: str = '') -> JsonDict:
        """A JSON merge patch; a missing object is not an error (it may be gone already)."""
        return await self.request(
            'PATCH', self.url(plural, namespace, name, subresource), verb='PATCH',
            resource=f'{plural}/{subresource}' if subresource else plural,
            body=patch, content_type='application/merge-patch+json', missing_ok=True)

    async def delete(self, plural: str, namespace: str, name: str) -> JsonDict:
        return await self.request('DELETE', self.url(plural, namespace, name), verb='DELETE', resource=plural,
                                  missing_ok=True)

    async def delete_collection(self, plural: str, namespace: str) -> JsonDict:
        return await self.request('DELETE', self.url(plural, namespace), verb='DELETECOLLECTION', resource=plural)

    async def watch(self, plural: str, namespace: str, resource_version: str) -> AsyncIterator[JsonDict]:
        """
        The raw watch events since the version, until the server closes the stream.

        The API server counts a WATCH when it ends, so it is tallied here when it ends too:
        the readings taken while it runs then agree with the server's.
        """
        params = {'watch': 'true', 'resourceVersion': resource_version, 'allowWatchBookmarks': 'true',
                  'timeoutSeconds': '3600'}
        try:
            async with self.session.get(self.url(plural, namespace), params=params) as response:
                if response.status != 200:
                    raise ApiError(response.status, await response.text())
                buffer = b''
                async for chunk in response.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b'\n')
                    for line in lines:
                        if line.strip():
                            yield json.loads(line)
        finally:
            self.tally['WATCH', plural] += 1

    # --- Namespaces ---

    async def create_namespace(self, name: str) -> None:
        body = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}}
        await self.request('POST', f'{self.server}/api/v1/namespaces', verb='POST', resource='namespaces', body=body)

    async def delete_namespace(self, name: str) -> None:
        await self.request('DELETE', f'{self.server}/api/v1/namespaces/{name}', verb='DELETE', resource='namespaces',
                           missing_ok=True)

    async def namespace_exists(self, name: str) -> bool:
        found = await self.request('GET', f'{self.server}/api/v1/namespaces/{name}', verb='GET',
                                   resource='namespaces', missing_ok=True)
        return bool(found)

    # --- Non-resource endpoints (the API server does not count /metrics in its own metrics) ---

    async def read_metrics(self) -> bytes:
        async with self.session.get(f'{self.server}/metrics') as response:
            if response.status != 200:
                raise ApiError(response.status, await response.text())
            return await response.read()

    # --- The common part ---

    async def request(self, method: str, url: str, *, verb: str, resource: str,
                      params: Mapping[str, str] | None = None, body: Mapping[str, Any] | None = None,
                      content_type: str = 'application/json', missing_ok: bool = False) -> JsonDict:
        self.tally[verb, resource] += 1
        headers = {'Content-Type': content_type} if body is not None else {}
        for attempt in range(5):
            async with self.session.request(method, url, params=params, json=body, headers=headers) as response:
                if response.status == 429 and attempt < 4:  # the API server's own flow control: retry as clients do
                    await asyncio.sleep(float(response.headers.get('Retry-After', '1')))
                    self.tally[verb, resource] += 1
                    continue
                if response.status == 404 and missing_ok:
                    return {}
                if response.status >= 400:
                    raise ApiError(response.status, await response.text())
                result: JsonDict = await response.json()
                return result
        raise AssertionError('unreachable')
