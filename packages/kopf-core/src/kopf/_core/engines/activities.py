"""
Activities: the operator-level handlers (startup, cleanup, login, probes).

They are executed with the same error protocol as the resource handlers
(retries, backoffs, timeouts), but their state is kept in memory only: they
belong to this operator process, not to any object.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import credentials
from kopf._core.actions import execution, lifecycles, progression
from kopf._core.actions import kwargs as kwargs_
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
        default_errors: handlers.ErrorsMode = handlers.ErrorsMode.TEMPORARY,
) -> Mapping[handlers.HandlerId, progression.HandlerOutcome]:
    """Run all handlers of the activity until each has succeeded or failed for good."""
    logger = logging.getLogger(f'kopf.activities.{activity.value}')
    selected = list(handlers_ if handlers_ is not None else registry.get_activity_handlers(activity=activity))
    state = progression.State({}).with_purpose(activity.value, selected)
    outcomes: Dict[handlers.HandlerId, progression.HandlerOutcome] = {}

    base_kwargs = dict(extra_kwargs or {}, logger=logger, memo=memo, settings=settings, activity=activity)

    def build_kwargs(handler: handlers.BaseHandler, handler_state: progression.HandlerState) -> Dict[str, Any]:
        return kwargs_.build_handler_kwargs(base_kwargs, handler, handler_state)

    # All at once: the activities are the operator's own, no handler may wait for another one.
    context = execution.ExecutionContext(settings=settings, logger=logger, build_kwargs=build_kwargs,
                                         lifecycle=lifecycles.all_at_once)
    ids = [h.id for h in selected]
    while not state.done_for(ids):
        delays = state.delays(ids)
        if delays and min(delays) > 0:
            await asyncio.sleep(min(delays))
        round_outcomes = await execution.execute_handlers_once(handlers_=selected, state=state, context=context,
                                                               default_errors=default_errors)
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
    # Without login handlers of the operator, the client's defaults are the login handlers:
    # each of them contributes its credentials (if any), and the vault prefers the highest priority.
    own_handlers = registry.has_activity_handlers(activity=activity)
    try:
        outcomes = await run_activity(activity=activity, registry=registry, settings=settings, memo=memo,
                                      handlers_=None if own_handlers else default_login_handlers(driver))
    except ActivityError as e:
        outcomes = e.outcomes
    items: Dict[str, credentials.ConnectionInfo] = {
        str(hid): o.result for hid, o in outcomes.items()
        if isinstance(o.result, credentials.ConnectionInfo)}
    await vault.populate(items)
    if vault.is_empty():
        # Kopf's one line in the log; the reasons and the next step are said once, by the error.
        headline = f"{prefix} has failed: no credentials were retrieved from the login handlers."
        reasons = explain_no_credentials(outcomes, driver=None if own_handlers else driver)
        next_step = NEXT_STEP_OWN if own_handlers else NEXT_STEP
        error = credentials.LoginError(f"{headline}\n  {reasons}\n  {next_step}")
        logger.warning(headline)
        await vault.fail(error)
        raise error
    logger.info(f"{prefix} has finished.")


# What to do when nothing is found: said once, at the end of the login error.
NEXT_STEP = ("Next step: set KUBECONFIG (or create ~/.kube/config), or start kopf-testing's local control plane: "
             "eval \"$(python -m kopf_testing.controlplane start --state-dir /tmp/cp)\"; "
             "see Authentication: docs/authentication.md")
NEXT_STEP_OWN = ("Next step: make a login handler return a kopf.ConnectionInfo; "
                 "see Authentication: docs/authentication.md#your-own-login-handler")


def explain_no_credentials(
        outcomes: Mapping[handlers.HandlerId, progression.HandlerOutcome],
        *,
        driver: Optional[protocols.ClientDriver],
) -> str:
    """
    Each login handler tried and why it has given nothing, for the one message of the login error.

    A handler that returns ``None`` says nothing about why; the default ones are the
    driver's, which may explain them (and name the methods it could not even try,
    e.g. libraries that are not installed) with an optional ``explain_missing_credentials()``
    returning the reasons by the login functions' names.
    """
    explain = getattr(driver, 'explain_missing_credentials', None) if driver is not None else None
    explained: Dict[str, str] = dict(explain()) if explain is not None else {}
    reasons: List[str] = []
    for handler_id, outcome in outcomes.items():
        name = str(handler_id)
        if outcome.exception is not None:
            why = str(outcome.exception).strip().splitlines()[0] if str(outcome.exception).strip() else (
                type(outcome.exception).__name__)
        elif isinstance(outcome.result, credentials.ConnectionInfo):
            why = "its credentials were rejected before (e.g. with HTTP 401), so they are not used again"
        else:
            why = explained.get(name, "returned no credentials")
        explained.pop(name, None)
        reasons.append(f"{name} ({why})")
    tried = f"Tried: {'; '.join(reasons)}." if reasons else "There are no login handlers."
    untried = [f"{name} ({why})" for name, why in explained.items()]  # e.g. their libraries are missing
    return f"{tried}\n  Not tried: {'; '.join(untried)}." if untried else tried


def default_login_handlers(driver: protocols.ClientDriver) -> Sequence[handlers.ActivityHandler]:
    """
    The client's default login functions as login handlers, named by the functions.

    Their errors are ignored: a library that cannot log in here (e.g. no kubeconfig for it)
    must not block the others; whoever has found credentials, contributes them.
    """
    return [
        handlers.ActivityHandler(
            fn=fn, id=handlers.HandlerId(getattr(fn, '__name__', 'default_login')),
            param=None, errors=handlers.ErrorsMode.IGNORED, timeout=None, retries=None, backoff=None,
            activity=handlers.Activity.AUTHENTICATION)
        for fn in driver.default_login_fns()
    ]
