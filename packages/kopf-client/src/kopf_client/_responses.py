"""
Reading the responses' bodies and turning error responses into API errors.

Kubernetes answers errors with a ``Status`` object (``{"kind": "Status",
"code": 409, "reason": "AlreadyExists", "message": ...}``); the framework
looks into it (e.g. for the conflict's details), so it is kept as the error's
payload. Proxies and load balancers in front of the API server answer with
HTML or plain text instead: then the text becomes the message.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Mapping, Optional

import aiohttp

from kopf import clients
from kopf_client import _jsons, _retrying

# Long HTML pages of proxies would flood the logs; the beginning is enough to diagnose.
_MAX_MESSAGE_LENGTH = 1000


BodyReader = Callable[[aiohttp.ClientResponse], Awaitable[Any]]


async def read_json(response: aiohttp.ClientResponse) -> Any:
    """The whole body of a success parsed as JSON, or ``None`` if empty; not JSON is a server bug and raises."""
    raw = await response.read()
    return None if not raw or raw.isspace() else _jsons.loads(raw)


async def read_body(response: aiohttp.ClientResponse, reader: Optional[BodyReader] = read_json) -> tuple[Any, str]:
    """
    Read the body: the payload of a success, or of an error its parsed JSON (or ``None``) and its text.

    A success's body is read by the reader (by default, parsed as JSON); without
    a reader (a stream), it is not read here. Error responses are parsed leniently,
    as they can come from intermediaries. The text of a success is never needed:
    it is not decoded (objects can be large).
    """
    if response.status < 400:
        return (await reader(response) if reader is not None else None), ''
    raw = await response.read()
    text = raw.decode('utf-8', errors='replace')
    try:
        return (_jsons.loads(raw) if raw and not raw.isspace() else None), text
    except ValueError:
        return None, text


def make_error(
        *,
        status: int,
        payload: Any,
        text: str,
        headers: Optional[Mapping[str, str]] = None,
) -> clients.APIError:
    """The most specific :class:`kopf.clients.APIError` for an error response."""
    cls = clients.error_class_for_status(status)
    status_payload = payload if isinstance(payload, Mapping) else None
    message = None
    if status_payload is None and text.strip():  # not a Status: e.g. an HTML page of a proxy
        message = text.strip()[:_MAX_MESSAGE_LENGTH]
    if issubclass(cls, clients.APITooManyRequestsError):
        retry_after = _retrying.parse_retry_after((headers or {}).get('Retry-After'))
        return cls(status_payload, status=status, message=message, retry_after=retry_after)
    return cls(status_payload, status=status, message=message)


def make_watch_error(status_object: Mapping[str, Any]) -> clients.APIError:
    """
    The error of an ``ERROR`` watch-event (its object is a ``Status``).

    The HTTP status of the stream itself is 200; the real status is in the
    object's ``code`` (e.g. 410 for an expired resource version). A code-less
    error is treated as a server error, so that the caller reconnects.
    """
    code = status_object.get('code')
    status = code if isinstance(code, int) and code >= 400 else 500
    cls = clients.error_class_for_status(status)
    return cls(status_object, status=status)
