"""
Serving one review (admission or conversion): from HTTP to the framework's function and back.

The framework appends the handler id to the webhook URLs as the last path
component (``https://host:port/root/handler-id``), so the handler id is the
rest of the path after the server's root. A request to the root itself runs all the
admission handlers (e.g. a manual ``curl`` for debugging).

Only transport-level problems are the server's business: a body that is not an
admission review (not JSON, too large, nested too deeply, or refused by the
framework's function with a ``ValueError``) is answered with ``400 Bad Request``
and the reason; a body that does not arrive in time with ``408 Request Timeout``
(and the connection is closed); any other failure of the framework's function
with ``500 Internal Server Error``. The verdicts of the handlers, including
denials, travel inside a successful admission review.

Once the body is parsed, the answers and the log lines name the review by its
``kind``, as the framework dispatches it: a ``ConversionReview`` is a conversion
review, anything else an admission review. Before that (a body too large, late,
or not JSON), the kind is unknown and the review is named an admission review.

The body is parsed with :class:`~kopf_webhooks._parsing.JsonParser`: large
bodies in slices, so that the operator's other tasks go on meanwhile.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Optional

import aiohttp.web

from kopf_webhooks import _dismantling, _parsing

if TYPE_CHECKING:
    from kopf import WebhookFn

logger = logging.getLogger('kopf.webhooks')

# Kubernetes stores objects of up to ~1.5 MiB; a review carries up to two of them (old & new).
MAX_REVIEW_SIZE = 8 * 1024 * 1024

Handler = Callable[[aiohttp.web.Request], Awaitable[aiohttp.web.StreamResponse]]


def build_handler(fn: WebhookFn, *, parser: _parsing.JsonParser, body_timeout: float) -> Handler:
    """
    Make an aiohttp handler for the reviews (admission and conversion).

    The route's ``webhook`` part is the rest of the path after the root path
    (URL-decoded by aiohttp); it is absent or empty for the root itself.
    The body must arrive within ``body_timeout`` seconds after the head.
    Large reviews are freed in slices once answered, as they are parsed.
    """
    dismantler = _dismantling.Dismantler(parser.slicing)  # taking turns with the parsing of large bodies

    async def handle(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        webhook = request.match_info.get('webhook', '').strip('/') or None
        payload, large = await _parse_review(request, parser=parser, body_timeout=body_timeout)
        try:
            return await _serve(fn, request, payload, webhook=webhook)
        finally:
            if large:
                dismantler.dismantle_later(payload)

    return handle


async def _serve(fn: WebhookFn, request: aiohttp.web.Request, payload: Any, *,
                 webhook: Optional[str]) -> aiohttp.web.StreamResponse:
    what = _review_kind(payload)
    try:
        response = await fn(
            payload,
            webhook=webhook,
            headers=request.headers,
            sslpeer=_get_sslpeer(request),
        )
    except ValueError as e:  # the framework's verdict on the payload: a malformed review
        raise aiohttp.web.HTTPBadRequest(text=f"The {what} review is malformed: {e}") from e
    except RecursionError as e:  # the framework's recursive processing of a deeply nested review
        logger.error(f"{what.capitalize()} request to {request.path!r} is nested too deeply to be served.")
        raise aiohttp.web.HTTPBadRequest(text=f"The {what} review is nested too deeply.") from e
    except Exception as e:
        logger.exception(f"{what.capitalize()} request to {request.path!r} failed to be served.")
        raise aiohttp.web.HTTPInternalServerError(text=f"The {what} review could not be served.") from e
    try:
        text = json.dumps(response)
    except RecursionError as e:  # e.g. a deeply nested object echoed back (as the parser allows it)
        logger.error(f"{what.capitalize()} request to {request.path!r} is nested too deeply to be answered.")
        raise aiohttp.web.HTTPBadRequest(text=f"The {what} review is nested too deeply.") from e
    return aiohttp.web.Response(text=text, content_type='application/json')


async def _parse_review(
        request: aiohttp.web.Request, *, parser: _parsing.JsonParser, body_timeout: float,
) -> tuple[Any, bool]:
    """The review, and whether it is large (parsed in slices, to be freed in slices too)."""
    try:
        raw = await asyncio.wait_for(request.read(), timeout=body_timeout)
    except aiohttp.web.HTTPRequestEntityTooLarge as e:
        raise aiohttp.web.HTTPBadRequest(
            text=f"The admission review is larger than the limit of {request.client_max_size} bytes.") from e
    except asyncio.TimeoutError as e:
        logger.debug(f"Dropping the connection from {request.remote}: no complete body "
                     f"within {body_timeout} seconds.")
        timeout = aiohttp.web.HTTPRequestTimeout(
            text=f"The admission review did not arrive within {body_timeout} seconds.")
        timeout.force_close()  # the rest of the body is not awaited
        raise timeout from e
    try:
        payload = await parser.parse(raw)
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, NestingTooDeepError are ValueErrors
        raise aiohttp.web.HTTPBadRequest(text=f"The admission review is not a valid JSON: {e}") from e
    if not isinstance(payload, Mapping) or not isinstance(payload.get('request'), Mapping):
        raise aiohttp.web.HTTPBadRequest(
            text=f"The {_review_kind(payload)} review must be a JSON object with a 'request' object.")
    return payload, parser.is_large(raw)


def _review_kind(payload: Any) -> str:
    """How the answers name a parsed review: by its kind, as the framework's function dispatches it."""
    return 'conversion' if isinstance(payload, Mapping) and payload.get('kind') == 'ConversionReview' else 'admission'


def _get_sslpeer(request: aiohttp.web.Request) -> Optional[Mapping[str, Any]]:
    """The client's certificate, if the client presented one and it was verified."""
    peercert: Optional[Mapping[str, Any]] = None
    if request.transport is not None:
        peercert = request.transport.get_extra_info('peercert')
    return peercert or None  # an empty dict means "presented but not verified"
