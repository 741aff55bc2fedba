"""
Activities: the operator-level handlers (startup, cleanup, login, probes).

They are executed with the same error protocol as the resource handlers
(retries, backoffs, timeouts), but their state is kept in memory only: they
belong to this operator process, not to any object.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Dict, Mapping, Optional, Sequence

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import credentials
from kopf._core.actions import execution, invocation, progression
from kopf._core.intents import handlers, registries


class ActivityError(Exception):
    """An activity handler has failed permanently (e.g. a startup handler)."""

    def __init__(self, msg: str, *, outcomes: Mapping[handlers.HandlerId, progression.HandlerOutcome]) -> None:
        super().__init__(msg)
        self.outcomes = outcomes


async def run_activity(
        *,
        activity: handlers.Activity,
        registry: registries.OperatorRegistry,
        settings: configuration.OperatorSettings,
        memo: Any,
        extra_kwargs: Optional[Mapping[str, Any]] = None,
        handlers_: Optional[Sequence[handlers.BaseHandler]] = None,
) -> Mapping[handlers.HandlerId, progression.HandlerOutcome]:
    """Run all handlers of the activity until each has succeeded or failed for good."""
    logger = logging.getLogger(f'kopf.activities.{activity.value}')
    selected = list(handlers_ if handlers_ is not None else registry.get_activity_handlers(activity=activity))
    state = progression.State({}).with_purpose(activity.value, selected)
    outcomes: Dict[handlers.HandlerId, progression.HandlerOutcome] = {}

    def build_kwargs(handler: handlers.BaseHandler, handler_state: progression.HandlerState) -> Dict[str, Any]:
        return dict(
            extra_kwargs or {},
            logger=logger, memo=memo, settings=settings, param=handler.param,
            retry=handler_state.retries,
            started=handler_state.started.replace(tzinfo=None),
            runtime=progression.utcnow() - handler_state.started,
            activity=activity,
        )

    context = execution.ExecutionContext(settings=settings, logger=logger, build_kwargs=build_kwargs)
    ids = [h.id for h in selected]
    while not state.done_for(ids):
        delays = state.delays(ids)
        if delays and min(delays) > 0:
            await asyncio.sleep(min(delays))
        round_outcomes = await execution.execute_handlers_once(handlers_=selected, state=state, context=context)
        outcomes.update(round_outcomes)
        state = state.with_outcomes(round_outcomes)

    failed = {hid: o for hid, o in outcomes.items() if o.exception is not None}
    if failed:
        raise ActivityError(f"One or more {activity.value} handlers failed.", outcomes=outcomes)
    return outcomes


async def authenticator(
        *,
        registry: registries.OperatorRegistry,
        settings: configuration.OperatorSettings,
        vault: credentials.Vault,
        driver: protocols.ClientDriver,
        memo: Any,
        ready: Optional[asyncio.Event] = None,
) -> None:
    """Keep the vault populated: log in at start and again whenever it is depleted."""
    initial = True
    while True:
        await authenticate(registry=registry, settings=settings, vault=vault, driver=driver,
                           memo=memo, initial=initial)
        initial = False
        if ready is not None:
            ready.set()
        await vault.wait_for_emptiness()


async def authenticate(
        *,
        registry: registries.OperatorRegistry,
        settings: configuration.OperatorSettings,
        vault: credentials.Vault,
        driver: protocols.ClientDriver,
        memo: Any,
        initial: bool,
) -> None:
    """Run the login handlers (or the client's defaults) and populate the vault."""
    logger = logging.getLogger('kopf.activities.authentication')
    prefix = 'Initial authentication' if initial else 'Re-authentication'
    logger.info(f"{prefix} has been initiated.")
    activity = handlers.Activity.AUTHENTICATION
    if registry.has_activity_handlers(activity=activity):
        try:
            outcomes = await run_activity(activity=activity, registry=registry, settings=settings, memo=memo)
        except ActivityError as e:
            outcomes = e.outcomes
        items: Dict[str, credentials.ConnectionInfo] = {
            str(hid): o.result for hid, o in outcomes.items()
            if isinstance(o.result, credentials.ConnectionInfo)}
    else:
        items = await _default_logins(driver=driver, logger=logger)
    await vault.populate(items)
    if vault.is_empty():
        error = credentials.LoginError(f"{prefix} has failed: no credentials were retrieved "
                                       f"from the login handlers.")
        logger.warning(str(error))
        await vault.fail(error)
        raise error
    logger.info(f"{prefix} has finished.")


async def _default_logins(*, driver: protocols.ClientDriver, logger: Any) -> Dict[str, credentials.ConnectionInfo]:
    """The first of the client's default login methods that finds credentials here."""
    for fn in driver.default_login_fns():
        info = await invocation.invoke(fn, kwargs=dict(logger=logger))
        if isinstance(info, credentials.ConnectionInfo):
            name = getattr(fn, '__name__', 'default')
            return {name: info}
    return {}
