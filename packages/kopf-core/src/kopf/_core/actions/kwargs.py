"""
The keyword arguments passed to handlers and filters (see "Arguments" in the manual).

They are derived from the cause and the handler's state; building them in one
place keeps handlers, filters and sub-handlers consistent with each other.
"""
from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Dict, Optional

from kopf._cogs.structs import bodies, diffs, references
from kopf._core.actions import progression
from kopf._core.intents import causes, handlers


def build_body_kwargs(resource: references.Resource, body: bodies.Body) -> Dict[str, Any]:
    """The object and its parts: the kwargs of every function that gets an object."""
    return dict(
        resource=resource,
        body=body,
        spec=body.spec,
        meta=body.metadata,
        status=body.status,
        uid=body.metadata.uid,
        name=body.metadata.name,
        namespace=body.metadata.namespace,
        labels=body.metadata.labels,
        annotations=body.metadata.annotations,
    )


def build_resource_kwargs(cause: causes.BaseCause) -> Dict[str, Any]:
    """The kwargs common to all resource handlers: the object and its parts."""
    kwargs = build_body_kwargs(cause.resource, cause.body)
    kwargs.update(
        patch=cause.patch,
        logger=cause.logger,
        memo=cause.memo,
    )
    if cause.indices:
        kwargs.update(cause.indices)  # indices override the framework's kwargs by name
    return kwargs


def build_watching_kwargs(cause: causes.WatchingCause) -> Dict[str, Any]:
    kwargs = build_resource_kwargs(cause)
    kwargs.update(event=cause.event, type=cause.type)
    return kwargs


def build_changing_kwargs(
        cause: causes.ChangingCause,
        *,
        handler: Optional[handlers.BaseHandler] = None,
        state: Optional[progression.HandlerState] = None,
        base: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """
    The kwargs of a change's handler (or, without a handler, of the change's filters).

    ``base`` is what :func:`build_resource_kwargs` gives for the same object in the
    same cycle, if already built: the object's parts are then not read again.
    """
    kwargs = dict(base) if base is not None else build_resource_kwargs(cause)
    diff, old, new = cause.diff, cause.old, cause.new
    if handler is not None and isinstance(handler, handlers.ResourceHandler) and handler.field:
        diff = diffs.reduce(cause.diff, handler.field)
        old = _resolve(cause.old, handler.field)
        new = _resolve(cause.new, handler.field)
    kwargs.update(
        reason=cause.reason,
        diff=diff,
        old=old,
        new=new,
    )
    if handler is not None:
        kwargs.update(param=handler.param)
    kwargs.update(build_attempt_kwargs(state))
    return kwargs


def build_changing_handler_kwargs(
        cause: causes.ChangingCause,
        base: Mapping[str, Any],
        handler: handlers.BaseHandler,
        state: progression.HandlerState,
) -> Dict[str, Any]:
    """The kwargs of one change handler's attempt, from the object's kwargs of the cycle (``base``)."""
    return build_changing_kwargs(cause, handler=handler, state=state, base=base)


def build_handler_kwargs(
        base: Mapping[str, Any],
        handler: handlers.BaseHandler,
        state: progression.HandlerState,
) -> Dict[str, Any]:
    """The base kwargs (of an object or an activity) with those of one handler's attempt."""
    return dict(base, param=handler.param, **build_attempt_kwargs(state))


def build_attempt_kwargs(state: Optional[progression.HandlerState]) -> Dict[str, Any]:
    """``retry``, ``started``, ``runtime`` of a handler's attempt (the first one if no state)."""
    now = progression.utcnow()
    if state is None:
        return dict(retry=0, started=now.replace(tzinfo=None), runtime=datetime.timedelta(0))
    return dict(
        retry=state.retries,
        # Naive UTC, as users compare it with datetime.utcnow()-like values.
        started=state.started.astimezone(datetime.timezone.utc).replace(tzinfo=None),
        runtime=now - state.started,
    )


def _resolve(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return None
        obj = obj[key]
    return obj
