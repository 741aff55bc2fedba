"""
What each operator process RECEIVES from its watch-streams, counted on the wire.

A :class:`CountingProxy` sits between one operator process and the API server
(the chaos proxy without faults: plain HTTP in front, TLS to the server) and
notes the uid of every object of one resource that it passes on: in the watch
events (``ADDED``, ``MODIFIED``, ``DELETED``; not bookmarks) and in the lists
(a replica lists again whenever its watch-streams restart). It shows what the
API server sent to that process — what sharding on the server's side saves —
and not what the process kept after its own filtering.

:class:`ProxyLoop` serves such proxies from an event loop in a thread of its
own, for synchronous tests; asynchronous code (the benchmarks) starts them
directly.
"""
import asyncio
import json
import pathlib
import ssl
import threading

import aiohttp
from aiohttp import web

from integration.chaos import _proxy
from integration.chaos._harness import _write_kubeconfig
from kopf_testing.controlplane import ControlPlane

COUNTED_TYPES = frozenset({'ADDED', 'MODIFIED', 'DELETED'})


class CountingProxy(_proxy.FaultProxy):
    """A proxy that passes everything on as it comes and notes the objects of one resource that it passes on."""

    def __init__(self, upstream: str, ssl_context: ssl.SSLContext, journal: pathlib.Path, *, plural: str) -> None:
        super().__init__(upstream, ssl_context, journal)
        self.plural = plural
        self.uids: list[str] = []  # one per watch event received, in their order (appended in the proxy's loop)
        self.listed: list[str] = []  # one per object in a list received
        self.lists = 0  # the list requests (each page of a chunked listing is one), not the watches

    @property
    def received(self) -> int:
        """The watch events received so far."""
        return len(self.uids)

    async def stop(self) -> None:
        for watch in list(self._watches):  # the open streams end now, not at the API server's timeout
            if watch.pump is not None:
                watch.pump.cancel()
        await super().stop()

    async def _serve_request(self, request: web.Request, *, drop: bool) -> web.StreamResponse:
        response = await super()._serve_request(request, drop=drop)
        body = getattr(response, 'body', None)
        if request.method == 'GET' and request.path.endswith(f'/{self.plural}') and response.status == 200 \
                and isinstance(body, bytes) and request.query.get('watch') not in ('1', 'true'):
            self.lists += 1
            self.listed.extend(item['metadata']['uid'] for item in json.loads(body).get('items', []))
        return response

    async def _pump(self, upstream: aiohttp.ClientResponse, watch: _proxy._Watch) -> None:
        counted = f'/{self.plural}' in watch.path
        buffer = b''
        try:
            async for chunk in upstream.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b'\n')
                for line in lines:
                    # Noted once passed on: the streams that the operator has left fail their next write.
                    if not await _proxy._write_safely(watch, line + b'\n'):
                        return
                    if counted and line.strip():
                        self._note(line)
        except (aiohttp.ClientError, OSError):
            pass  # the API server went away: the operator sees its stream end

    def _note(self, line: bytes) -> None:
        event = json.loads(line)
        if event.get('type') in COUNTED_TYPES:
            self.uids.append(event['object']['metadata']['uid'])


class ProxyLoop:
    """Counting proxies to one local control plane, served by an event loop in a background thread."""

    def __init__(self, control_plane: ControlPlane, workdir: pathlib.Path, *, plural: str) -> None:
        self.control_plane = control_plane
        self.workdir = workdir
        self.plural = plural
        self.proxies: list[CountingProxy] = []
        self._ssl_context = ssl.create_default_context(cafile=str(control_plane.ca_path))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name='counting-proxies', daemon=True)
        self._thread.start()

    def kubeconfig(self, name: str) -> tuple[CountingProxy, pathlib.Path]:
        """A new proxy, and a kubeconfig for one operator process that leads through it (the admin's token)."""
        proxy = CountingProxy(self.control_plane.server, self._ssl_context, self.workdir / f'{name}.journal',
                              plural=self.plural)
        url = asyncio.run_coroutine_threadsafe(proxy.start(), self._loop).result(timeout=60)
        self.proxies.append(proxy)
        path = _write_kubeconfig(self.workdir / f'{name}.kubeconfig', url, self.control_plane.admin_token)
        return proxy, path

    def close(self) -> None:
        for proxy in self.proxies:
            asyncio.run_coroutine_threadsafe(proxy.stop(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=60)
        self._loop.close()
