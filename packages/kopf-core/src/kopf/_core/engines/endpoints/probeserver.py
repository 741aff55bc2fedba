"""
A bounded HTTP/1.x server for the health probes: one small request, one small response.

Kubernetes probes send a few hundred bytes (``GET /healthz HTTP/1.1``, ``Host``,
``User-Agent``, ``Accept``, ``Connection: close``) in one packet and wait for
a short answer. Anyone else who can reach the port can also open thousands
of connections and send heads that never end. The stdlib's streams allow 64 KiB
per line and do not count connections, so the health server was once grown by
such a flood from 29 MB to 263 MB. Hence every cost here is bounded:

- the request line and the headers: :data:`MAX_HEAD_BYTES` together, at most
  :data:`MAX_HEADER_LINES` header lines (``431`` beyond them, at once);
- the time to send them: :data:`HEAD_TIMEOUT` from the connection's start
  (then the connection is closed without an answer);
- the time to take the response: :data:`WRITE_TIMEOUT` (then it is aborted);
- the open connections: :data:`MAX_CONNECTIONS`. Beyond it, the oldest
  connections that have not yet sent a complete head are closed: a flood of
  slow clients only pushes out its own oldest members, and a probe that sends
  its request at once is read before it can be pushed out (the excess is closed
  one turn of the event loop after the newcomers are admitted, when the data
  already sent has been read). If all connections are being answered, a new
  one gets ``503`` at once.

A head that is not a well-formed HTTP/1.x request gets ``400`` (never a traceback).
The metrics endpoint is served by this server too: each server's log lines and
answers name its own endpoint (``what``), so that a flood is looked for on the right port.
The request body, if any, is never read. Every connection is closed after
one response. Only :mod:`asyncio`'s transports are used: kopf-core is stdlib-only.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
import urllib.parse
from typing import Awaitable, Callable, Dict, List, Optional, Set, Tuple, Union

logger = logging.getLogger('kopf.engines.probing')

MAX_HEAD_BYTES = 8192  # the request line and all headers, with their line ends
MAX_HEADER_LINES = 100
MAX_CONNECTIONS = 256  # more than one accept-batch of asyncio (100), so that a new probe is never pushed out unread
HEAD_TIMEOUT = 2.0  # from the connection's start to the end of its head
WRITE_TIMEOUT = 2.0  # for the client to take the response
WARNING_INTERVAL = 60.0  # between the warnings that the limit of connections is reached

Response = Tuple[int, str, bytes]  # status, content type, body
RespondFn = Callable[[str, str], Awaitable[Response]]  # (method, path) -> response


@dataclasses.dataclass(frozen=True)
class Limits:
    """The limits of one server; the defaults are the module's constants (smaller ones are for tests)."""
    head_bytes: int = MAX_HEAD_BYTES
    header_lines: int = MAX_HEADER_LINES
    connections: int = MAX_CONNECTIONS
    head_timeout: float = HEAD_TIMEOUT
    write_timeout: float = WRITE_TIMEOUT


BAD_REQUEST: Response = (400, 'text/plain', b"Bad request.\n")
TOO_LARGE: Response = (431, 'text/plain', b"The request's head is too large.\n")
BUSY: Response = (503, 'text/plain', b"Too many connections: try again later.\n")

_REASONS = {200: 'OK', 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed',
            431: 'Request Header Fields Too Large', 500: 'Internal Server Error', 503: 'Service Unavailable'}
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a method, as RFC 9110 defines a token
_VERSION = re.compile(r'HTTP/1\.[0-9]')
_CONTROLS = re.compile(r'[\x00-\x1f\x7f]')


def find_head_end(buffer: Union[bytes, bytearray], start: int = 0) -> Optional[int]:
    """The offset after the empty line that ends the head (CRLF or bare LF lines), or ``None`` if not yet."""
    ends = [pos + len(mark) for mark in (b'\n\r\n', b'\n\n') if (pos := buffer.find(mark, start)) >= 0]
    return min(ends) if ends else None


class HeadError(Exception):
    """The head is not acceptable; the response says why (the client's fault, not worth a log line)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response[2].decode().strip())
        self.response = response


def parse_head(head: bytes, *, max_lines: int = MAX_HEADER_LINES) -> Tuple[str, str]:
    """The method and the path of a complete request head; :class:`HeadError` if it is not acceptable."""
    lines = [line.rstrip('\r') for line in head.decode('latin-1').split('\n')]
    request_line, header_lines = lines[0], [line for line in lines[1:] if line]
    if len(header_lines) > max_lines:
        raise HeadError(TOO_LARGE)
    if any(':' not in line and not line[0].isspace() for line in header_lines):
        raise HeadError(BAD_REQUEST)
    parts = request_line.split(' ')
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise HeadError(BAD_REQUEST)
    path = _path_of(parts[1])
    if path is None:
        raise HeadError(BAD_REQUEST)
    return parts[0].upper(), path


def _path_of(target: str) -> Optional[str]:
    """The path of a request target in the origin form (``/x?y``) or the absolute form (``http://h/x``)."""
    if _CONTROLS.search(target):
        return None
    if target.startswith('/'):
        return target.partition('?')[0].partition('#')[0]
    try:
        parts = urllib.parse.urlsplit(target)  # raises e.g. for "http://[::1/" (an unclosed IPv6 host)
    except ValueError:
        return None
    if parts.scheme not in ('http', 'https') or not parts.netloc:
        return None
    return parts.path or '/'


def format_response(response: Response, *, head_only: bool = False) -> bytes:
    status, ctype, body = response
    headers = [
        f'HTTP/1.1 {status} {_REASONS[status]}',
        f'Content-Type: {ctype}; charset=utf-8',
        f'Content-Length: {len(body)}',
        'Cache-Control: no-store',
        'X-Content-Type-Options: nosniff',
        'Connection: close',
    ]
    if status == 405:
        headers.append('Allow: GET, HEAD')
    return '\r\n'.join(headers).encode() + b'\r\n\r\n' + (b'' if head_only else body)


class Connections:
    """The open connections: those still sending their heads (oldest first), and those being answered."""

    def __init__(self, limits: Limits, what: str = 'health') -> None:
        self.limits = limits
        self.what = what  # the endpoint's name in the log lines and the answers: e.g. "health", "metrics"
        self._reading: Dict[Connection, None] = {}  # a dict keeps the order of admission
        self._answering: Set[Connection] = set()
        self._sweep: Optional[asyncio.Handle] = None
        self._warned: Optional[float] = None

    def __len__(self) -> int:
        return len(self._reading) + len(self._answering)

    def admit(self, connection: Connection) -> bool:
        """Count a new connection in; ``False`` if all the places are taken by answers (it must go)."""
        if len(self._answering) >= self.limits.connections:
            self._warn()
            return False
        self._reading[connection] = None
        if len(self) > self.limits.connections and self._sweep is None:
            self._sweep = asyncio.get_running_loop().call_soon(self._close_excess)
        return True

    def answering(self, connection: Connection) -> None:
        self._reading.pop(connection, None)
        self._answering.add(connection)

    def forget(self, connection: Connection) -> None:
        self._reading.pop(connection, None)
        self._answering.discard(connection)

    def close_all(self) -> List[asyncio.Task[None]]:
        """Abort every connection; return the answers in progress (cancelled), to be awaited."""
        connections = list(self._reading) + list(self._answering)
        for connection in connections:
            connection.abort()
        return [task for connection in connections if (task := connection.cancel()) is not None]

    def _close_excess(self) -> None:
        self._sweep = None
        excess = len(self) - self.limits.connections
        if excess > 0:
            self._warn()
            for connection in list(self._reading)[:excess]:
                connection.abort()

    def _warn(self) -> None:
        now = time.monotonic()
        if self._warned is None or now - self._warned >= WARNING_INTERVAL:
            self._warned = now
            logger.warning(f"The {self.what} endpoint has reached its limit of {self.limits.connections} connections: "
                           f"the oldest incomplete requests are closed, new ones may be refused. "
                           f"If it is not expected, something floods the endpoint.")


class Connection(asyncio.Protocol):
    """One client: its head is read within the limits, then answered once, then the connection is closed."""

    def __init__(self, connections: Connections, respond: RespondFn) -> None:
        self._connections = connections
        self._limits = connections.limits
        self._respond = respond
        self._transport: Optional[asyncio.Transport] = None
        self._head = bytearray()
        self._timer: Optional[asyncio.TimerHandle] = None
        self._task: Optional[asyncio.Task[None]] = None
        self._lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if not self._connections.admit(self):
            self._reply(BUSY)
            return
        self._timer = asyncio.get_running_loop().call_later(self._limits.head_timeout, self.abort)

    def data_received(self, data: bytes) -> None:
        if self._task is not None or self._transport is None or self._transport.is_closing():
            return  # the head is complete: the rest (a body?) is not needed
        start = max(0, len(self._head) - 2)
        self._head += data[:self._limits.head_bytes + 1 - len(self._head)]  # one byte over shows the excess
        end = find_head_end(self._head, start)
        if end is None or end > self._limits.head_bytes:
            if len(self._head) > self._limits.head_bytes:
                self._connections.forget(self)
                self._reply(TOO_LARGE)
            return
        self._transport.pause_reading()
        head, self._head = bytes(self._head[:end]), bytearray()
        try:
            method, path = parse_head(head, max_lines=self._limits.header_lines)
        except HeadError as e:
            self._connections.forget(self)
            self._reply(e.response)
            return
        if self._timer is not None:
            self._timer.cancel()  # the head is in time; the probes may take longer
        self._connections.answering(self)
        self._task = asyncio.get_running_loop().create_task(self._answer(method, path))

    def eof_received(self) -> Optional[bool]:
        self._connections.forget(self)  # the head is incomplete (reading stops once it is complete)
        return False  # close the transport

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._lost = True
        if self._timer is not None:
            self._timer.cancel()
        if self._task is None or self._task.done():
            self._connections.forget(self)

    def abort(self) -> None:
        """Close at once, without an answer: for the slow, the excess, and at the exit."""
        self._connections.forget(self)
        if self._transport is not None:
            self._transport.abort()

    def cancel(self) -> Optional[asyncio.Task[None]]:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            return self._task
        return None

    async def _answer(self, method: str, path: str) -> None:
        try:
            try:
                response = await self._respond(method, path)
            except Exception:  # a bug, not a client's fault: in the log only
                what = self._connections.what
                logger.exception(f"The {what} server has failed to answer a request.")
                response = (500, 'text/plain', f"The {what} server has failed to answer.\n".encode())
            self._reply(response, head_only=method == 'HEAD')
        finally:
            if self._lost:
                self._connections.forget(self)

    def _reply(self, response: Response, *, head_only: bool = False) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._transport is None or self._transport.is_closing():
            return
        self._transport.write(format_response(response, head_only=head_only))
        self._transport.close()  # after the buffered response is sent
        self._timer = asyncio.get_running_loop().call_later(self._limits.write_timeout, self._transport.abort)


class ProbeServer:
    """The listening sockets and the connections: closed together."""

    def __init__(self, server: asyncio.Server, connections: Connections) -> None:
        self._server = server
        self._connections = connections

    def port(self, default: int) -> int:
        """The port actually listened on (e.g. for port 0)."""
        sockets = self._server.sockets
        return int(sockets[0].getsockname()[1]) if sockets else default

    async def close(self) -> None:
        """Stop listening, abort every connection, and wait for the answers in progress to be cancelled."""
        self._server.close()
        tasks = self._connections.close_all()
        if tasks:
            await asyncio.wait(tasks)
        await self._server.wait_closed()


async def start_server(respond: RespondFn, host: str, port: int, *, limits: Limits = Limits(),
                       what: str = 'health') -> ProbeServer:
    """Listen on the host and port; each request is answered with what ``respond(method, path)`` returns."""
    connections = Connections(limits, what)
    server = await asyncio.get_running_loop().create_server(lambda: Connection(connections, respond), host, port)
    return ProbeServer(server, connections)
