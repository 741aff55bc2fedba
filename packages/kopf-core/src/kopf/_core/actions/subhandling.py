"""
Sub-handlers: handlers registered dynamically by other handlers while they run.

A parent handler registers children with ``@kopf.subhandler`` or
``kopf.register()``, or executes functions directly with ``await
kopf.execute(fns=...)``. The children are tracked like regular handlers (each
has its own progress record, id ``parent/child``; in the metrics, all the
descendants of a top-level handler count as one, ``parent/*``), but their functions are
not stored anywhere: the parent stays unfinished, and is invoked again on the
next cycle to register them again, until all its children are finished.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Collection, Dict, Iterable, List, Mapping, Optional, Set, Union

from kopf._cogs.configs import progress
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, patches
from kopf._core.actions import errors, execution, lifecycles, progression, results
from kopf._core.intents import handlers, matching, registries

# Aliases: kopf.execute() has a public kwarg named `handlers`, which shadows the module there.
HandlerId = handlers.HandlerId
ChangingHandler = handlers.ChangingHandler


@dataclasses.dataclass
class SubExecution:
    """What the children of one parent handler's invocation need and produce."""
    parent_id: handlers.HandlerId
    purpose: Optional[str]
    body: bodies.Body
    patch: patches.Patch
    storage: progress.ProgressStorage
    context: execution.ExecutionContext
    kwargs: Mapping[str, Any]  # the parent's kwargs: for the children's filters
    registered: List[handlers.ChangingHandler] = dataclasses.field(default_factory=list)
    subrefs: Set[str] = dataclasses.field(default_factory=set)
    executed: bool = False


    async def finish(self) -> None:
        if self.registered and not self.executed:
            self.executed = True
            await execute_children(self, self.registered)


SubExecutionFactory = Callable[[handlers.BaseHandler, progression.HandlerState, Mapping[str, Any]], SubExecution]


def make_scope(
        *,
        purpose: Optional[str],
        body: bodies.Body,
        patch: patches.Patch,
        storage: progress.ProgressStorage,
        settings: Any,
        logger: typedefs.Logger,
        build_kwargs: Callable[[handlers.BaseHandler, progression.HandlerState], Dict[str, Any]],
        lifecycle: Optional[lifecycles.LifeCycleFn] = None,
) -> SubExecutionFactory:
    """A factory of sub-handlers' scopes for the handlers of one cycle (nested ones too)."""
    def factory_under(top_id: Optional[str]) -> SubExecutionFactory:
        def factory(handler: handlers.BaseHandler, state: progression.HandlerState,
                    kwargs: Mapping[str, Any]) -> SubExecution:
            top = top_id if top_id is not None else str(handler.id)
            context = execution.ExecutionContext(settings=settings, logger=logger, build_kwargs=build_kwargs,
                                                 subscope=factory_under(top), lifecycle=lifecycle,
                                                 metrics_handler=metrics_label(top))
            return SubExecution(parent_id=handler.id, purpose=purpose, body=body, patch=patch,
                                storage=storage, context=context, kwargs=kwargs)
        return factory
    return factory_under(None)


def metrics_label(top_id: str) -> str:
    """
    The handler label in the metrics of all the sub-handlers (at any depth) of a top-level handler.

    Their own ids are often made of the object's contents (``create_fn/item-{name}``): as label
    values, they would add series without bound, kept after the objects are gone, and show the
    contents to whoever scrapes the metrics. The top-level handler's id is declared in the code.
    """
    return f'{top_id}/*'


def get_current() -> SubExecution:
    scope = execution.subexecution_var.get(None)
    if isinstance(scope, SubExecution):
        return scope
    raise RuntimeError("Sub-handlers can be registered or executed only inside a handler "
                       "of the resource-changing kind (e.g. @kopf.on.create).")


def build_child(
        fn: Any,
        *,
        parent_id: str,
        id: Optional[str],
        param: Optional[Any] = None,
        errors: Optional[handlers.ErrorsMode] = None,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
        backoff: Optional[float] = None,
        labels: Any = None,
        annotations: Any = None,
        when: Any = None,
        field: Any = None,
        value: Any = None,
        old: Any = None,
        new: Any = None,
) -> handlers.ChangingHandler:
    real_field = handlers.parse_field(field)
    child_id = handlers.build_handler_id(fn, id, real_field)
    return handlers.ChangingHandler(
        fn=fn, id=handlers.HandlerId(f'{parent_id}/{child_id}'), param=param, errors=errors,
        timeout=timeout, retries=retries, backoff=backoff, selector=None, labels=labels,
        annotations=annotations, when=when, field=real_field, value=value, reason=None,
        old=old, new=new)


async def execute(
        *,
        fns: Optional[Union[Iterable[Callable[..., Any]], Mapping[str, Callable[..., Any]]]] = None,
        handlers: Optional[Iterable[ChangingHandler]] = None,
        registry: Optional[registries.OperatorRegistry] = None,
        lifecycle: Optional[lifecycles.LifeCycleFn] = None,
        cause: Optional[Any] = None,
) -> None:
    """
    Execute the given functions or handlers as sub-handlers of the current handler.

    The ``lifecycle`` chooses which of them run in each cycle (by default, the
    operator's lifecycle, see :mod:`kopf.lifecycles`). With nothing given, the
    sub-handlers registered so far by the current handler are executed (this
    happens implicitly after the handler returns, if it did not call this itself).
    Raises an internal retry if some of them are not finished, so that the parent
    handler is invoked again later.

    ``cause=`` (accepted by Kopf for its internal use) is refused: there is no other
    cause to run the sub-handlers with than the current handler's.
    """
    if cause is not None:
        raise TypeError("kopf.execute(cause=...) is not supported: the sub-handlers always run "
                        "with the object, patch and kwargs of the handler that executes them.")
    if len([arg for arg in (fns, handlers, registry) if arg is not None]) > 1:
        raise TypeError("Only one of fns=, handlers=, registry= can be passed to kopf.execute().")
    sub = get_current()
    children: List[ChangingHandler]
    if fns is not None:
        items = fns.items() if isinstance(fns, Mapping) else ((None, fn) for fn in fns)
        children = [build_child(fn, parent_id=sub.parent_id, id=key) for key, fn in items]
    elif handlers is not None:
        children = [dataclasses.replace(h, id=HandlerId(f'{sub.parent_id}/{h.id}')) for h in handlers]
    elif registry is not None:
        children = [dataclasses.replace(h, id=HandlerId(f'{sub.parent_id}/{h.id}'))
                    for h in registry.get_all_changing_handlers()]
    else:
        children = list(sub.registered)
    sub.executed = True
    await execute_children(sub, children, lifecycle=lifecycles.validate(lifecycle))


async def execute_children(
        sub: SubExecution,
        children: Collection[handlers.ChangingHandler],
        *,
        lifecycle: Optional[lifecycles.LifeCycleFn] = None,
) -> None:
    """Run the due children once, persist their state into the patch; retry the parent if unfinished."""
    selected = [child for child in children
                if matching.match_resource_filters(child, body=sub.body, kwargs=sub.kwargs)]
    states: Dict[handlers.HandlerId, progression.HandlerState] = {}
    for child in selected:
        record = sub.storage.fetch(key=child.id, body=sub.body)
        states[child.id] = (progression.HandlerState.from_record(record) if record is not None
                            else progression.HandlerState.from_scratch(purpose=sub.purpose))
    state = progression.State(states, purpose=sub.purpose)
    context = sub.context if lifecycle is None else dataclasses.replace(sub.context, lifecycle=lifecycle)
    outcomes = await execution.execute_handlers_once(handlers_=selected, state=state, context=context)
    for child_id, outcome in outcomes.items():
        results.store_result(sub.patch, child_id, outcome, sub.context.logger)
    state = state.with_outcomes(outcomes)
    state.store(body=sub.body, patch=sub.patch, storage=sub.storage)
    for child_id in state:
        sub.subrefs.add(child_id)
        sub.subrefs.update(state[child_id].subrefs)

    ids = [child.id for child in selected]
    if not state.done_for(ids):
        delays = state.delays(ids)
        raise errors.HandlerChildrenRetry(None, delay=min(delays) if delays else None)
