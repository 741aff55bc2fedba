"""
One cycle of an object's change handlers, as an object whose methods are its steps.

The steps, each of which can end the cycle: the scope (stealth mode), the change
since the last handled state, the finalizer, the daemons, then the due handlers
and the write-back of all the changes in as few requests as possible.

The result is when to come back: a delay if some handlers are postponed
(retries, backoffs), or nothing if the cycle is complete.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
from typing import Any, Mapping, Optional, Sequence

from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, diffs, patches, references
from kopf._core.actions import application, execution, loggers, progression, remembering, subhandling
from kopf._core.actions import kwargs as kwargs_
from kopf._core.actions.results import store_result
from kopf._core.engines.background import daemons, stoppers
from kopf._core.intents import causes, handlers, matching
from kopf._core.reactor import inventory
from kopf._core.reactor.cycles import CycleResult, ProcessingContext

# How often to check if the daemons of a deleted object have exited (to release it).
DAEMONS_POLLING_INTERVAL = 1.0

# The reasons that end the cycle right away: the object is gone or is not ours to finalize.
_NOTHING_TO_DO = {
    causes.Reason.GONE: "Deleted, really deleted, and we are notified.",
    causes.Reason.FREE: "Deletion, but we are done with it, and we do not care.",
}


@dataclasses.dataclass(frozen=True)
class _Change:
    """What has changed since the last handled state, and where the state is kept."""
    reason: causes.Reason
    initial: bool
    old: Optional[Mapping[str, Any]]
    new: Mapping[str, Any]
    diff: diffs.Diff
    diffbase_storage: remembering.RememberingDiffBaseStorage
    progress_storage: remembering.RememberingProgressStorage


class ChangeCycle:
    """One cycle of the change handlers of one object, at one event."""

    def __init__(
            self,
            *,
            context: ProcessingContext,
            resource: references.Resource,
            raw_type: Optional[str],
            body: bodies.Body,
            patch: patches.Patch,
            memory: Optional[inventory.ObjectMemory],
            memo: Any,
    ) -> None:
        self.context = context
        self.settings = context.settings
        self.resource = resource
        self.raw_type = raw_type
        self.body = body
        self.patch = patch
        self.memory = memory
        self.memo = memo
        self.logger = loggers.ObjectLogger(body=body, settings=context.settings)
        self.changing_handlers = context.registry.get_changing_handlers(resource=resource)
        self.spawning_handlers = context.registry.get_spawning_handlers(resource=resource)
        self.indices = context.indexers.as_kwargs()
        self.base_kwargs = kwargs_.build_resource_kwargs(causes.BaseCause(
            resource=resource, body=body, patch=patch, memo=memo, logger=self.logger, indices=self.indices))

    async def run(self) -> CycleResult:
        """The steps of the cycle, in order; each can end it."""
        state_handlers: Sequence[handlers.ResourceHandler] = [*self.changing_handlers, *self.spawning_handlers]
        if self.raw_type == 'DELETED':
            self._stop_daemons(stoppers.DaemonStoppingReason.RESOURCE_DELETED)

        # Stealth mode: objects matching no handler's filters are neither logged nor annotated.
        if not matching.is_in_scope(state_handlers, body=self.body, kwargs=self.base_kwargs):
            return await self._out_of_scope()

        change = self._detect_change()
        if change.reason in _NOTHING_TO_DO:
            self.logger.debug(_NOTHING_TO_DO[change.reason])
            return CycleResult()

        deleting = change.reason == causes.Reason.DELETE
        if not deleting:
            needs_finalizer = matching.requires_finalizer(state_handlers, body=self.body, kwargs=self.base_kwargs)
            finalized = await self._fix_finalizer(needs_finalizer=needs_finalizer)
            if finalized is not None:
                return finalized

        waiting = await self._keep_daemons(deleting=deleting)
        if waiting is not None:
            return waiting

        if change.reason == causes.Reason.NOOP:
            self.logger.debug("Something has changed, but we are not interested (the essence is the same).")
            return CycleResult(patched_body=await self._apply(self.body))

        delay = await self._run_handlers(change)
        if delay is None and self.memory is not None:
            self.memory.initial_pending = False
        return await self._write_back(change, delay=delay, deleting=deleting)

    async def _out_of_scope(self) -> CycleResult:
        """No handler is interested: stop the daemons, release the finalizer, apply the event handlers' patch."""
        self._stop_daemons(stoppers.DaemonStoppingReason.FILTERS_MISMATCH)
        if self.raw_type == 'DELETED':
            return CycleResult()
        patched = None
        if self.settings.persistence.finalizer in self.body.metadata.get('finalizers', []):
            patched = await self._release_finalizer(
                self.body, "Removing the finalizer, as there are no handlers requiring it.")
        # The event handlers' changes (if any) are theirs, not ours: they are applied anyway.
        return CycleResult(patched_body=await self._apply_on_top(patched))

    def _detect_change(self) -> _Change:
        """The diff since the last handled state (the diff-base), and the reason of the cycle."""
        persistence = self.settings.persistence
        # What the storages fail to keep (e.g. in a pruned status) is remembered instead: otherwise,
        # every cycle would start from scratch and re-run the finished handlers endlessly.
        lost = self.memory.lost if self.memory is not None else remembering.LostState()
        diffbase_storage = remembering.RememberingDiffBaseStorage(persistence.diffbase_storage, lost,
                                                                  logger=self.logger)
        progress_storage = remembering.RememberingProgressStorage(persistence.progress_storage, lost)
        extra_fields = self.context.registry.get_extra_fields(resource=self.resource)
        old = diffbase_storage.fetch(body=self.body)
        old = progress_storage.clear(essence=old) if old is not None else None
        new = progress_storage.clear(essence=diffbase_storage.build(body=self.body, extra_fields=extra_fields))
        diff = diffs.diff(old, new)
        initial = bool(self.memory is not None and self.memory.initial_pending)
        reason = causes.detect_changing_reason(finalizer=persistence.finalizer, raw_event_type=self.raw_type,
                                               body=self.body, old=old, diff=diff, initial=initial)
        return _Change(reason=reason, initial=initial, old=old, new=new, diff=diff,
                       diffbase_storage=diffbase_storage, progress_storage=progress_storage)

    async def _fix_finalizer(self, *, needs_finalizer: bool) -> Optional[CycleResult]:
        """Add the finalizer if the handlers need it, or release it if not; nothing else happens then."""
        finalizer = self.settings.persistence.finalizer
        has_finalizer = finalizer in self.body.metadata.get('finalizers', [])
        if needs_finalizer and not has_finalizer:
            self.logger.debug("Adding the finalizer, thus preventing the actual deletion.")
            patched = await application.add_finalizer(client=self.context.client, resource=self.resource,
                                                      body=self.body, finalizer=finalizer, logger=self.logger)
        elif not needs_finalizer and has_finalizer:
            patched = await self._release_finalizer(
                self.body, "Removing the finalizer, as there are no handlers requiring it.")
        else:
            return None
        return CycleResult(patched_body=await self._apply_on_top(patched))

    async def _keep_daemons(self, *, deleting: bool) -> Optional[CycleResult]:
        """Spawn the daemons of a live object; on deletion, stop them and wait until they exit."""
        if not self.spawning_handlers or self.memory is None:
            return None
        if not deleting:
            self._spawn_daemons(self.memory)
            return None
        if self.memory.daemons is None:
            return None
        # The deletion handlers run (and the finalizer is released) only after the daemons exit.
        self._stop_daemons(stoppers.DaemonStoppingReason.RESOURCE_DELETED)
        await daemons.wait_for_instant_exit(self.memory.daemons, settings=self.settings)
        if self.memory.daemons.stopped:
            return None
        return CycleResult(delay=DAEMONS_POLLING_INTERVAL, patched_body=await self._apply(self.body))

    async def _run_handlers(self, change: _Change) -> Optional[float]:
        """Execute the due handlers, record the outcomes; return the delay until the next attempt."""
        cause = causes.ChangingCause(
            resource=self.resource, body=self.body, patch=self.patch, memo=self.memo, logger=self.logger,
            indices=self.indices, reason=change.reason,
            initial=change.initial, diff=change.diff, old=change.old, new=change.new)
        cause_kwargs = kwargs_.build_changing_kwargs(cause, base=self.base_kwargs)
        selected = matching.select_changing_handlers(self.changing_handlers, cause=cause, kwargs=cause_kwargs)
        state = self._load_state(change, selected)
        if selected and self.logger.isEnabledFor(logging.DEBUG):  # the body's repr is costly: only if shown
            self.logger.debug(f"{causes.TITLES[change.reason]} is in progress: {dict(self.body)!r}")
            if change.reason == causes.Reason.UPDATE:
                self.logger.debug(f"{causes.TITLES[change.reason]} diff: {change.diff!r}")

        outcomes = await execution.execute_handlers_once(
            handlers_=selected, state=state, context=self._execution_context(cause, change, cause_kwargs))
        for handler_id, outcome in outcomes.items():
            store_result(self.patch, handler_id, outcome, self.logger)
        state = state.with_outcomes(outcomes)
        return self._store_state(change, state, selected)

    def _load_state(self, change: _Change, selected: Sequence[handlers.ChangingHandler]) -> progression.State:
        """The handlers' progress of this purpose; the progress of a superseded purpose is dropped."""
        purpose = change.reason.value
        state = progression.State.from_storage(body=self.body, storage=change.progress_storage,
                                               handlers_=self.changing_handlers)
        superseded = state.superseding_purposes(purpose)
        if superseded:
            s, f, r = state.counts(state.keys())
            previous = causes.TITLES.get(causes.Reason(next(iter(superseded))), 'Handling')
            self.logger.info(f"{previous} is superseded by {causes.TITLES[change.reason].lower()}: "
                             f"{s} succeeded; {f} failed; {r} left to the moment.")
            state.purge(body=self.body, patch=self.patch, storage=change.progress_storage, ids=list(state.keys()))
            state = progression.State({}, purpose=purpose)
        return state.with_purpose(purpose, selected)

    def _execution_context(
            self,
            cause: causes.ChangingCause,
            change: _Change,
            cause_kwargs: Mapping[str, Any],
    ) -> execution.ExecutionContext:
        build_kwargs = functools.partial(kwargs_.build_changing_handler_kwargs, cause, cause_kwargs)
        subscope = subhandling.make_scope(purpose=change.reason.value, body=self.body, patch=self.patch,
                                          storage=change.progress_storage, settings=self.settings,
                                          logger=self.logger, build_kwargs=build_kwargs,
                                          lifecycle=self.context.lifecycle)
        return execution.ExecutionContext(settings=self.settings, logger=self.logger, build_kwargs=build_kwargs,
                                          subscope=subscope, lifecycle=self.context.lifecycle)

    def _store_state(
            self,
            change: _Change,
            state: progression.State,
            selected: Sequence[handlers.ChangingHandler],
    ) -> Optional[float]:
        """Keep the progress (and the diff-base when all is done); the delay until the next attempt."""
        selected_ids = [h.id for h in selected]
        known_ids = {h.id for h in self.changing_handlers}  # with the other selections, before any call out
        if not state.done_for(selected_ids):
            state.store(body=self.body, patch=self.patch, storage=change.progress_storage)
            delays = state.delays(selected_ids)
            return min(delays) if delays else None

        s, f, _ = state.counts(selected_ids)
        if selected:
            self.logger.info(f"{causes.TITLES[change.reason]} is processed: {s} succeeded; {f} failed.")
            if f == 0:
                self.logger.info(f"All handlers succeeded for {causes.NOUNS[change.reason]}.")
        state.purge(body=self.body, patch=self.patch, storage=change.progress_storage,
                    ids=known_ids & set(state.keys()))
        if change.reason != causes.Reason.DELETE and change.old != change.new:
            change.diffbase_storage.store(body=self.body, patch=self.patch, essence=dict(change.new))
        return None

    async def _write_back(self, change: _Change, *, delay: Optional[float], deleting: bool) -> CycleResult:
        """Apply the cycle's patch; release the finalizer when the deletion is handled; check what was kept."""
        patched = await self._apply(self.body)
        patched_body = bodies.Body(patched) if patched is not None else None
        change.progress_storage.verify(patched_body)
        if delay is None and deleting:
            patched = await self._release_finalizer(patched_body or self.body,
                                                    "Removing the finalizer, thus allowing the actual deletion.")
            return CycleResult(patched_body=patched)
        change.diffbase_storage.verify(patched_body)
        if delay is None:
            self.logger.debug("Handling cycle is finished, waiting for new changes.")
        return CycleResult(delay=delay, patched_body=patched)

    def _daemon_context(self, memory: inventory.ObjectMemory) -> daemons.DaemonContext:
        assert memory.daemons is not None
        return daemons.object_context(settings=self.settings, client=self.context.client, resource=self.resource,
                                      memory=memory.daemons, memo=memory.memo,
                                      indices=self.indices, pending_fns=memory.pending_fns)

    def _spawn_daemons(self, memory: inventory.ObjectMemory) -> None:
        if memory.daemons is None:
            memory.daemons = daemons.DaemonsMemory(body=bodies.Body(dict(self.body)))
        matched = [h for h in self.spawning_handlers
                   if matching.match_resource_filters(h, body=self.body, kwargs=self.base_kwargs)]
        daemons.spawn_daemons(memory=memory.daemons, matching=matched, context=self._daemon_context(memory))

    def _stop_daemons(self, reason: stoppers.DaemonStoppingReason) -> None:
        memory = self.memory
        if memory is not None and memory.daemons is not None:
            daemons.stop_daemons(memory=memory.daemons, reason=reason, context=self._daemon_context(memory))

    async def _apply(self, body: bodies.Body) -> Optional[typedefs.RawBody]:
        if not self.patch:
            return None
        return await application.apply_patch(client=self.context.client, resource=self.resource, body=body,
                                             patch=self.patch, logger=self.logger)

    async def _apply_on_top(self, patched: Optional[typedefs.RawBody]) -> Optional[typedefs.RawBody]:
        """
        Apply the event handlers' patch after the framework's own change of this cycle (if any).

        In the cycles that only add or release the finalizer (or see the object out
        of scope), the change handlers do not run, but the event handlers have run
        already: their changes must not be lost. The freshest body is the one the
        framework's own change has produced, if it has succeeded.
        """
        latest = bodies.Body(patched) if patched is not None else self.body
        return await self._apply(latest) or patched

    async def _release_finalizer(self, body: bodies.Body, message: str) -> Optional[typedefs.RawBody]:
        self.logger.debug(message)
        return await application.remove_finalizer(client=self.context.client, resource=self.resource, body=body,
                                                  finalizer=self.settings.persistence.finalizer, logger=self.logger)
