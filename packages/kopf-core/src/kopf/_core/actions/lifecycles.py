"""
Lifecycles: which of the due handlers run in one handling cycle, and in which order.

A lifecycle gets the handlers that are due now (not finished, not sleeping
after a failure), in the order of declaration, and the handlers' state (a
mapping of handler ids to their progress, with ``.retries`` and the like).
It returns the handlers to invoke in this cycle, in the order of invocation.
The rest stay due: the operator comes back to them in the next cycle, right
after the outcomes of this one are stored on the object::

    kopf.run(lifecycle=kopf.lifecycles.one_by_one)

    @kopf.on.create('kopfexamples')
    async def create_fn(**_):
        await kopf.execute(fns={'a': step_a, 'b': step_b}, lifecycle=kopf.lifecycles.all_at_once)

The default for the operator and for the sub-handlers is :func:`asap`, unless
changed with :func:`set_default_lifecycle`. The operator-level activities
(startup, cleanup, probes) always run all at once.
"""
from __future__ import annotations

import logging
import random
from typing import Any, Callable, Optional, Sequence

from kopf._core.intents.handlers import BaseHandler

# What users see as kopf.lifecycles; validate() and plan() are the framework's own.
__all__ = ['LifeCycleFn', 'all_at_once', 'asap', 'get_default_lifecycle', 'one_by_one', 'randomized',
           'set_default_lifecycle', 'shuffled']

logger = logging.getLogger('kopf.lifecycles')

Handlers = Sequence[BaseHandler]
LifeCycleFn = Callable[..., Handlers]


def all_at_once(handlers: Handlers, **_: Any) -> Handlers:
    """All the due handlers in one cycle, in the order of declaration."""
    return list(handlers)


def one_by_one(handlers: Handlers, **_: Any) -> Handlers:
    """
    The first due handler only, in the order of declaration.

    A handler that can be retried at once is retried before the next ones run;
    while it sleeps after a failure (a backoff or a delay), it is not due,
    and the next one runs.
    """
    return list(handlers)[:1]


def randomized(handlers: Handlers, **_: Any) -> Handlers:
    """One randomly chosen due handler per cycle."""
    return [random.choice(handlers)] if handlers else []


def shuffled(handlers: Handlers, **_: Any) -> Handlers:
    """All the due handlers in one cycle, in a random order."""
    return random.sample(list(handlers), k=len(handlers))


def asap(handlers: Handlers, *, state: Any, **_: Any) -> Handlers:
    """
    One handler per cycle: the one with the fewest retries so far (the first declared among equals).

    A failing handler goes to the back of the queue when its retry is due:
    the others, which have failed less, get their chance first.
    """
    def retries(handler: BaseHandler) -> int:
        return int(state[handler.id].retries or 0)
    return sorted(handlers, key=retries)[:1]


_default_lifecycle: Optional[LifeCycleFn] = None


def get_default_lifecycle() -> LifeCycleFn:
    """The lifecycle for the operators and ``kopf.execute()`` calls that are given none (``asap``)."""
    return _default_lifecycle if _default_lifecycle is not None else asap


def set_default_lifecycle(lifecycle: Optional[LifeCycleFn]) -> None:
    """Change the default lifecycle (``None`` restores ``asap``); it applies to the next cycles."""
    global _default_lifecycle
    validate(lifecycle)
    if _default_lifecycle is not None:
        logger.warning(f"The default lifecycle is already set to {_default_lifecycle}, "
                       f"overriding it to {lifecycle}.")
    _default_lifecycle = lifecycle


def validate(lifecycle: Optional[LifeCycleFn]) -> Optional[LifeCycleFn]:
    """Fail early (e.g. when the operator starts) on a lifecycle that cannot be called."""
    if lifecycle is not None and not callable(lifecycle):
        raise TypeError(f"A lifecycle must be a function of (handlers, **kwargs), got {lifecycle!r}; "
                        f"e.g. kopf.lifecycles.one_by_one.")
    return lifecycle


def plan(
        lifecycle: Optional[LifeCycleFn],
        due: Handlers,
        *,
        state: Any,
) -> Handlers:
    """
    The handlers to invoke in this cycle, as the lifecycle (or the default one) chooses among the due ones.

    A lifecycle that returns a handler that is not due (finished, sleeping, or
    foreign) is a mistake in that lifecycle, and so is one that returns none of
    the due handlers (the cycles would repeat at once, forever): both fail loudly
    rather than re-running finished handlers or spinning without progress.
    """
    if not due:
        return []
    real_lifecycle = lifecycle if lifecycle is not None else get_default_lifecycle()
    chosen = list(real_lifecycle(list(due), state=state))
    due_ids = {handler.id for handler in due}
    strangers = [handler for handler in chosen if getattr(handler, 'id', None) not in due_ids]
    if strangers:
        raise RuntimeError(f"The lifecycle {real_lifecycle!r} has chosen handlers that are not due now: "
                           f"{strangers!r}. It must return a subset of the handlers it was given.")
    if not chosen:
        raise RuntimeError(f"The lifecycle {real_lifecycle!r} has chosen none of the due handlers. "
                           f"It must return at least one of them when it is given some.")
    return chosen
