"""
Time limits for the clients' connections, which aiohttp does not impose by itself.

aiohttp waits for a request's line and headers as long as the client sends them,
a byte at a time if it likes, and for the body as long as it keeps coming; a
TLS handshake may take a minute. A few slow clients can so keep connections
(and their buffers) open indefinitely. Here:

* the TLS handshake must be done within ``head_timeout`` (asyncio's
  ``ssl_handshake_timeout``), and so must the closing TLS exchange
  (``ssl_shutdown_timeout``, where Python has it);
* each request's head (request line and headers) must be complete within
  ``head_timeout`` since the connection is established, or since the first
  byte of the next request on a kept-alive connection; otherwise the connection
  is dropped (:class:`GuardedProtocol`, around aiohttp's own protocol);
* the body's limit is the request handler's (see ``_requests``): aiohttp calls
  the handler as soon as the head is complete, and the handler reads the body;
* an idle kept-alive connection is closed by aiohttp after ``keepalive_timeout``.

The protocol knows that a head is complete when the application's middleware
(:func:`build_middleware`) sees the request; that is where the limit stops.
"""
from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any, Awaitable, Callable, Dict, Optional, cast

import aiohttp.web

logger = logging.getLogger('kopf.webhooks')


class Connections:
    """The guarded connections of one server, by their transports (as the requests know them)."""

    def __init__(self, *, head_timeout: float) -> None:
        self.head_timeout = head_timeout
        self._protocols: Dict[asyncio.BaseTransport, GuardedProtocol] = {}

    def __len__(self) -> int:
        return len(self._protocols)

    def wrap(self, protocol: asyncio.Protocol) -> GuardedProtocol:
        return GuardedProtocol(protocol, connections=self)

    def find(self, transport: Optional[asyncio.BaseTransport]) -> Optional[GuardedProtocol]:
        return self._protocols.get(transport) if transport is not None else None

    def _add(self, transport: asyncio.BaseTransport, protocol: GuardedProtocol) -> None:
        self._protocols[transport] = protocol

    def _remove(self, transport: asyncio.BaseTransport) -> None:
        self._protocols.pop(transport, None)


class GuardedProtocol(asyncio.Protocol):
    """
    aiohttp's protocol of one connection, with a deadline for each request's head.

    The deadline is set when the connection is made (after the TLS handshake),
    and again when the first data of a next request arrives on an idle
    connection; the middleware clears it when the head is complete. The data
    that arrives while a request is being served (its body) sets no deadline.
    """

    def __init__(self, protocol: asyncio.Protocol, *, connections: Connections) -> None:
        self._protocol = protocol
        self._connections = connections
        self._transport: Optional[asyncio.Transport] = None
        self._deadline: Optional[asyncio.TimerHandle] = None
        self._serving = False  # between the complete head and the end of the request's handling

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream server's connection: its transport reads, writes and can be aborted.
        self._transport = cast(asyncio.Transport, transport)
        self._connections._add(transport, self)
        self._set_deadline()
        self._protocol.connection_made(transport)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._clear_deadline()
        if self._transport is not None:
            self._connections._remove(self._transport)
        self._protocol.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._serving and self._deadline is None:
            self._set_deadline()  # the first data of a next request on a kept-alive connection
        self._protocol.data_received(data)

    def eof_received(self) -> Optional[bool]:
        return self._protocol.eof_received()

    def pause_writing(self) -> None:
        self._protocol.pause_writing()

    def resume_writing(self) -> None:
        self._protocol.resume_writing()

    def head_received(self) -> None:
        self._clear_deadline()
        self._serving = True

    def request_done(self) -> None:
        self._serving = False

    def _set_deadline(self) -> None:
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(self._connections.head_timeout, self._expire)

    def _clear_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self._transport is not None and not self._transport.is_closing():
            peer = self._transport.get_extra_info('peername')
            logger.debug(f"Dropping the connection from {peer}: no complete request head "
                         f"within {self._connections.head_timeout} seconds.")
            self._transport.abort()


Handler = Callable[[aiohttp.web.Request], Awaitable[aiohttp.web.StreamResponse]]


def build_middleware(connections: Connections) -> Any:
    """The middleware that tells the connections when a request's head is complete and served."""

    @aiohttp.web.middleware
    async def guard(request: aiohttp.web.Request, handler: Handler) -> aiohttp.web.StreamResponse:
        protocol = connections.find(request.transport)
        if protocol is not None:
            protocol.head_received()
        try:
            return await handler(request)
        finally:
            if protocol is not None:
                protocol.request_done()

    return guard


class GuardedSite(aiohttp.web.BaseSite):
    """
    A TCP site like aiohttp's ``TCPSite``, but with the guarded protocols and TLS time limits.

    aiohttp's own site passes no TLS handshake/shutdown timeouts to asyncio
    (the defaults are 60 & 30 seconds) and has no way to wrap the protocols.
    """

    def __init__(
            self,
            runner: aiohttp.web.BaseRunner,
            host: Optional[str],
            port: int,
            *,
            connections: Connections,
            ssl_context: Optional[Any] = None,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._port = port
        self._connections = connections

    @property
    def name(self) -> str:
        scheme = 'https' if self._ssl_context else 'http'
        return f"{scheme}://{self._host or '*'}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        factory = lambda: self._connections.wrap(server())  # noqa: E731
        timeout = self._connections.head_timeout
        if self._ssl_context is None:
            self._server = await loop.create_server(factory, self._host, self._port)
        elif sys.version_info >= (3, 11):
            self._server = await loop.create_server(
                factory, self._host, self._port, ssl=self._ssl_context,
                ssl_handshake_timeout=timeout, ssl_shutdown_timeout=timeout)
        else:
            self._server = await loop.create_server(
                factory, self._host, self._port, ssl=self._ssl_context,
                ssl_handshake_timeout=timeout)
