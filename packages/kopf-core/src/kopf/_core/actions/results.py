"""
The handlers' results, stored in the object's status under the handler's id.

A result is stored only if the API server can take it: JSON without NaN or
infinities. Anything else (a datetime, an arbitrary object, a cycle) would make
the whole patch fail, and with it the record of the handler's success, so the
handler would run again and again; instead, its result alone is dropped, with
an error saying so and what to return instead.
"""
from __future__ import annotations

import json

from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import patches
from kopf._core.actions import progression


def store_result(
        patch: patches.Patch,
        handler_id: str,
        outcome: progression.HandlerOutcome,
        logger: typedefs.Logger,
) -> None:
    """Put a succeeded handler's result into the patch's status, if it can be stored at all."""
    if not outcome.final or outcome.exception is not None or outcome.result is None:
        return
    try:
        json.dumps(outcome.result, allow_nan=False)
    except (TypeError, ValueError) as e:
        logger.error(f"Handler {handler_id!r} succeeded, but its result cannot be stored in the status: {e}. "
                     f"The result is dropped; return only JSON-serialisable values "
                     f"(dicts, lists, strings, finite numbers, booleans, None).")
        return
    patch.status[handler_id] = outcome.result
