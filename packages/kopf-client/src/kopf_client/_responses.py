"""
Reading the responses' bodies and turning error responses into API errors.

Kubernetes answers errors with a ``Status`` object (``{"kind": "Status",
"code": 409, "reason": "AlreadyExists", "message": ...}``); the framework
looks into it (e.g. for the conflict's details), so it is kept as the error's
payload. Proxies and load balancers in front of the API server answer with
HTML or plain text instead: then the text becomes the message.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import aiohttp

from kopf import clients
from kopf_client import _jsons, _retrying

# Long HTML pages of proxies would flood the logs; the beginning is enough to diagnose.
_MAX_MESSAGE_LENGTH = 1000


Decoder = Callable[[bytes], Any]


async def read_body(response: aiohttp.ClientResponse, decoder: Optional[Decoder] = _jsons.loads) -> tuple[Any, str]:
    """
    Read the whole body: the parsed JSON (or ``None``) and, of error responses only, the raw text.

    Success responses must be JSON (anything else is a server bug and raises);
    they are parsed by the decoder; without one (a stream), they are not read.
    Error responses are parsed leniently, as they can come from intermediaries.
    The text of a success is never needed: it is not decoded (objects can be large).
    """
    if decoder is None and response.status < 400:
        return None, ''
    raw = await response.read()
    text = raw.decode('utf-8', errors='replace') if response.status >= 400 else ''
    if not raw or raw.isspace():
        return None, text
    try:
        return (decoder(raw) if decoder is not None and response.status < 400 else _jsons.loads(raw)), text
    except ValueError:
        if response.status >= 400:
            return None, text
        raise


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
