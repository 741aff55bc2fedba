"""
Fixtures for the client's tests: a fake API server, the settings, a vault, a client.

The fake API server is a real aiohttp server on localhost (pytest-aiohttp):
the requests go through real sockets, real HTTP parsing and real aiohttp
sessions, so the disconnects, timeouts and streaming are those of real life.
What is scripted: the responses, path by path, each used once and in order.
What is not real: the Kubernetes semantics (there is none), and the time
between retries (the client's sleep only records the delays).
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Mapping, Optional

import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

import kopf
from kopf import clients
from kopf_client import AiohttpClient

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclasses.dataclass(frozen=True)
class SeenRequest:
    """A request as the fake API server has received it."""
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeApi:
    """
    An HTTP server with scripted responses per path, recording all requests.

    A request with no scripted response left gets 418: a status that is not
    retried, so that an unexpected request fails the test at once and clearly.
    """

    def __init__(self) -> None:
        self.url = ''
        self.requests: List[SeenRequest] = []
        self._handlers: Dict[str, List[Handler]] = {}

    def add(
            self,
            path: str,
            body: Any = None,
            *,
            status: int = 200,
            headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Respond to the next request of this path with this JSON (or an empty body)."""
        async def respond(_: web.Request) -> web.StreamResponse:
            if body is None:
                return web.Response(status=status, headers=headers)
            return web.json_response(body, status=status, headers=headers)
        self.add_handler(path, respond)

    def add_handler(self, path: str, handler: Handler) -> None:
        """Respond to the next request of this path with a custom handler."""
        self._handlers.setdefault(path, []).append(handler)

    def add_drop(self, path: str) -> None:
        """Close the connection of the next request of this path without responding."""
        async def drop(request: web.Request) -> web.StreamResponse:
            assert request.transport is not None
            request.transport.close()
            await asyncio.Event().wait()  # the handler is cancelled by the disconnect
            raise AssertionError("unreachable")
        self.add_handler(path, drop)

    def requests_to(self, path: str) -> List[SeenRequest]:
        return [request for request in self.requests if request.path == path]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(SeenRequest(
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers=dict(request.headers),
            body=await request.read(),
        ))
        handlers = self._handlers.get(request.path, [])
        if not handlers:
            return web.json_response({'kind': 'Status', 'code': 418, 'message': f'Unscripted: {request.path}'},
                                     status=418)
        return await handlers.pop(0)(request)


ApiFactory = Callable[..., Awaitable[FakeApi]]


@pytest.fixture()
async def api_factory(aiohttp_server: AiohttpServer) -> ApiFactory:
    """Start a fake API server, with the server's keyword arguments (e.g. ``ssl=``)."""
    async def make(**kwargs: Any) -> FakeApi:
        fake = FakeApi()
        app = web.Application()
        app.router.add_route('*', '/{path:.*}', fake.handle)
        server = await aiohttp_server(app, **kwargs)
        fake.url = str(server.make_url('/')).rstrip('/')
        return fake
    return make


@pytest.fixture()
async def api(api_factory: ApiFactory) -> FakeApi:
    return await api_factory()


@pytest.fixture()
def settings() -> kopf.OperatorSettings:
    return kopf.OperatorSettings()


@pytest.fixture()
def vault(api: FakeApi) -> clients.Vault:
    return clients.Vault({'main': kopf.ConnectionInfo(server=api.url, token='main-token')})


@pytest.fixture()
def sleeps() -> List[float]:
    """The delays the client has slept for (without sleeping)."""
    return []


@pytest.fixture()
async def client(
        vault: clients.Vault,
        settings: kopf.OperatorSettings,
        sleeps: List[float],
) -> AsyncIterator[AiohttpClient]:
    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    async with AiohttpClient(vault=vault, settings=settings, sleep=sleep) as client:
        yield client
