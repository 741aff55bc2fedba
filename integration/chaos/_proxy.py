"""
A fault-injecting HTTP proxy between the operator and the API server.

The operator speaks plain HTTP to the proxy (its kubeconfig, written by the
harness, names the proxy and carries a bearer token, which is passed through);
the proxy re-originates every request over TLS to the real API server. Being
in the middle of HTTP rather than TCP lets it answer for the API server (429,
500, 503), inject a 410 Gone ERROR event into a watch stream, and stall or cut
a stream between two complete lines of it.

Faults are armed by the harness at their scheduled moments (``inject``):
per-request faults hit the next requests, watch faults hit one open watch.
Everything the proxy does to the traffic, and every PATCH that fails on its
way (the handler's outcome the operator meant to store is then lost, so a
re-run is legitimate), goes to the faults journal.
"""
import asyncio
import dataclasses
import json
import pathlib
import socket
import ssl
from collections import deque

import aiohttp
from aiohttp import web

from . import _api, _records, _schedule

_HOP_HEADERS = frozenset(h.lower() for h in (
    'Host', 'Connection', 'Keep-Alive', 'Transfer-Encoding', 'TE', 'Upgrade', 'Proxy-Authorization',
    'Proxy-Connection', 'Content-Length', 'Accept-Encoding', 'Content-Encoding',
))
_PER_REQUEST = (_schedule.DROP_REQUEST, _schedule.DELAY, _schedule.THROTTLE, _schedule.SERVER_ERROR)
_PER_WATCH = (_schedule.DROP_WATCH, _schedule.STALL_WATCH, _schedule.GONE_WATCH)
_GONE_EVENT = {'type': 'ERROR', 'object': {
    'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
    'message': 'too old resource version (injected)', 'reason': 'Expired', 'code': 410,
}}


@dataclasses.dataclass
class _Armed:
    fault: _schedule.Fault
    remaining: int


@dataclasses.dataclass(eq=False)
class _Watch:
    """One open watch stream: its writer, and the fault that ends or pauses it."""
    path: str
    response: web.StreamResponse
    pump: 'asyncio.Task[None] | None' = None
    ending: str | None = None
    resumed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.resumed.set()


class FaultProxy:
    def __init__(self, upstream: str, ssl_context: ssl.SSLContext, journal: pathlib.Path) -> None:
        self._upstream = upstream.rstrip('/')
        self._ssl_context = ssl_context
        self._journal = journal
        self._armed: deque[_Armed] = deque()
        self._watches: list[_Watch] = []
        self._next_watch = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._stalls: set[asyncio.Task[None]] = set()
        self.url = ''

    async def start(self) -> str:
        """Listen on a free port of 127.0.0.1; return the proxy's URL."""
        connector = aiohttp.TCPConnector(ssl=self._ssl_context, limit=0)
        self._session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(
            total=None, sock_connect=10))
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route('*', '/{tail:.*}', self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        await web.SockSite(self._runner, sock).start()
        self.url = f'http://127.0.0.1:{sock.getsockname()[1]}'
        return self.url

    async def stop(self) -> None:
        for task in self._stalls:
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
            await asyncio.sleep(_api.TLS_CLOSING_GRACE)  # the upstream TLS connections finish closing

    @property
    def open_watches(self) -> int:
        return len(self._watches)

    def inject(self, fault: _schedule.Fault) -> None:
        """Arm a fault now: per-request ones for the next requests, watch ones on an open watch (if any)."""
        if fault.kind in _PER_REQUEST:
            self._armed.append(_Armed(fault, fault.count))
        elif fault.kind in _PER_WATCH:
            self._strike_watch(fault)
        else:
            raise ValueError(f"The proxy cannot inject {fault.kind!r}: it is not a fault of the wire.")

    # --- Watch faults ---

    def _strike_watch(self, fault: _schedule.Fault) -> None:
        candidates = [watch for watch in self._watches if watch.ending is None and watch.resumed.is_set()]
        if not candidates:
            self._log(fault.kind, path=None, missed=True)
            return
        watch = candidates[self._next_watch % len(candidates)]
        self._next_watch += 1
        self._log(fault.kind, path=watch.path, seconds=fault.seconds or None)
        if fault.kind == _schedule.STALL_WATCH:
            task = asyncio.create_task(self._stall(watch, fault.seconds))
            self._stalls.add(task)
            task.add_done_callback(self._stalls.discard)
        else:
            watch.ending = fault.kind
            if watch.pump is not None:
                watch.pump.cancel()

    async def _stall(self, watch: _Watch, seconds: float) -> None:
        watch.resumed.clear()
        try:
            await asyncio.sleep(seconds)
        finally:
            watch.resumed.set()

    # --- Serving ---

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        armed = self._take_armed()
        fault = armed.fault if armed is not None else None
        if fault is not None and fault.kind in (_schedule.THROTTLE, _schedule.SERVER_ERROR):
            self._log(fault.kind, path=request.path, method=request.method, status=fault.status)
            return _status_response(fault.status, seconds=fault.seconds)
        if fault is not None and fault.kind == _schedule.DELAY:
            self._log(fault.kind, path=request.path, method=request.method, seconds=fault.seconds)
            await asyncio.sleep(fault.seconds)
        if _is_watch(request):
            return await self._serve_watch(request)
        return await self._serve_request(request, drop=fault is not None and fault.kind == _schedule.DROP_REQUEST)

    def _take_armed(self) -> _Armed | None:
        while self._armed and self._armed[0].remaining <= 0:
            self._armed.popleft()
        if not self._armed:
            return None
        armed = self._armed[0]
        armed.remaining -= 1
        return armed

    async def _send_upstream(self, request: web.Request) -> aiohttp.ClientResponse | None:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        body = await request.read()
        try:
            return await self._session.request(
                request.method, self._upstream + request.path_qs, headers=headers, data=body or None)
        except (aiohttp.ClientError, OSError) as exc:  # the API server is restarting: as if it were not there
            self._log_failure(request, f'upstream unavailable: {exc.__class__.__name__}')
            _abort(request)
            return None

    async def _serve_request(self, request: web.Request, *, drop: bool) -> web.StreamResponse:
        upstream = await self._send_upstream(request)
        if upstream is None:
            return web.Response(status=502)
        async with upstream:
            try:
                body = await upstream.read()
            except (aiohttp.ClientError, OSError) as exc:
                self._log_failure(request, f'upstream broke: {exc.__class__.__name__}')
                _abort(request)
                return web.Response(status=502)
        if drop:  # the API server has done it, the operator will never know
            self._log(_schedule.DROP_REQUEST, path=request.path, method=request.method, status=upstream.status)
            _abort(request)
            return web.Response(status=502)
        if upstream.status >= 400:
            self._log_failure(request, f'answered {upstream.status}')
        return web.Response(status=upstream.status, headers=_response_headers(upstream), body=body)

    async def _serve_watch(self, request: web.Request) -> web.StreamResponse:
        upstream = await self._send_upstream(request)
        if upstream is None:
            return web.Response(status=502)
        async with upstream:
            response = web.StreamResponse(status=upstream.status, headers=_response_headers(upstream))
            try:
                await response.prepare(request)
            except ConnectionError:  # the operator has given up on this request already
                return response
            watch = _Watch(request.path, response)
            self._watches.append(watch)
            watch.pump = asyncio.create_task(self._pump(upstream, watch))
            try:
                await asyncio.wait([watch.pump])
            finally:
                watch.pump.cancel()
                self._watches.remove(watch)
        if watch.ending == _schedule.GONE_WATCH:
            await _write_safely(watch, (json.dumps(_GONE_EVENT) + '\n').encode())
        if watch.ending == _schedule.DROP_WATCH:
            _abort(request)
        else:
            try:
                await response.write_eof()
            except (ConnectionError, RuntimeError):
                pass
        return response

    async def _pump(self, upstream: aiohttp.ClientResponse, watch: _Watch) -> None:
        """Forward the stream line by line, so that a fault always falls between two events."""
        buffer = b''
        try:
            async for chunk in upstream.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b'\n')
                for line in lines:
                    await watch.resumed.wait()
                    if not await _write_safely(watch, line + b'\n'):
                        return
        except (aiohttp.ClientError, OSError):
            pass  # the API server went away: the operator sees its stream end

    # --- Journal ---

    def _log(self, fault: str, **fields: object) -> None:
        _records.append(self._journal, event='fault', fault=fault, **fields)

    def _log_failure(self, request: web.Request, reason: str) -> None:
        if request.method == 'PATCH':
            _records.append(self._journal, event='patch-failed', path=request.path, reason=reason)


def _is_watch(request: web.Request) -> bool:
    return request.query.get('watch', '').lower() in ('true', '1') or '/watch/' in request.path


def _response_headers(upstream: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}


def _status_response(status: int, *, seconds: float) -> web.Response:
    reason = 'TooManyRequests' if status == 429 else 'InternalError' if status == 500 else 'ServiceUnavailable'
    body = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
            'message': f'injected {status}', 'reason': reason, 'code': status}
    headers = {'Retry-After': str(max(1, round(seconds)))} if status == 429 else {}
    return web.json_response(body, status=status, headers=headers)


async def _write_safely(watch: _Watch, data: bytes) -> bool:
    async with watch.lock:
        try:
            await watch.response.write(data)
        except (ConnectionError, RuntimeError):
            return False
    return True


def _abort(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.abort()
