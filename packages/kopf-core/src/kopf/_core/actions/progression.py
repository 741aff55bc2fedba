"""
Progression: the per-handler state of a handling cycle, and its persistence.

The state is read from the object (via the progress storage) at the start of
a cycle, updated with the outcomes of the handlers invoked in that cycle, and
written back into the same patch as everything else. It is never kept only in
memory: a restarted operator continues where the previous one stopped.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
from typing import Any, Callable, Collection, Dict, Iterable, Mapping, Optional, Sequence

from kopf._cogs.configs import progress
from kopf._cogs.structs import bodies, patches
from kopf._core.intents import handlers

# The clock of the handlers' progress (an aware UTC time); the tests replace it to freeze the time.
# A partial of the C function, not a function of ours: it is read several times in every cycle.
utcnow: Callable[[], datetime.datetime] = functools.partial(datetime.datetime.now, datetime.timezone.utc)


@dataclasses.dataclass(frozen=True)
class HandlerOutcome:
    """The result of one invocation of one handler in one cycle."""
    final: bool
    delay: Optional[float] = None
    result: Any = None
    exception: Optional[BaseException] = None
    subrefs: Collection[str] = ()


@dataclasses.dataclass(frozen=True)
class HandlerState:
    """The persisted progress of one handler, across cycles and restarts."""
    started: datetime.datetime
    stopped: Optional[datetime.datetime] = None
    delayed: Optional[datetime.datetime] = None
    purpose: Optional[str] = None
    retries: int = 0
    success: bool = False
    failure: bool = False
    message: Optional[str] = None
    subrefs: Collection[str] = ()
    _origin: Optional[progress.ProgressRecord] = None  # as loaded, to skip unchanged writes

    @classmethod
    def from_scratch(cls, *, purpose: Optional[str] = None) -> HandlerState:
        return cls(started=utcnow(), purpose=purpose)

    @classmethod
    def from_record(cls, record: progress.ProgressRecord) -> HandlerState:
        return cls(
            started=progress.parse_timestamp(record.get('started')) or utcnow(),
            stopped=progress.parse_timestamp(record.get('stopped')),
            delayed=progress.parse_timestamp(record.get('delayed')),
            purpose=record.get('purpose'),
            retries=int(record.get('retries') or 0),
            success=bool(record.get('success')),
            failure=bool(record.get('failure')),
            message=record.get('message'),
            subrefs=tuple(record.get('subrefs') or ()),
            _origin=record,
        )

    def as_record(self) -> progress.ProgressRecord:
        # The fields in the stored order; the unset ones (None) are not stored at all.
        record: progress.ProgressRecord = {'started': progress.format_timestamp(self.started)}
        if self.stopped:
            record['stopped'] = progress.format_timestamp(self.stopped)
        if self.delayed:
            record['delayed'] = progress.format_timestamp(self.delayed)
        if self.purpose is not None:
            record['purpose'] = self.purpose
        record['retries'] = self.retries
        record['success'] = self.success
        record['failure'] = self.failure
        if self.message is not None:
            record['message'] = self.message
        if self.subrefs:
            record['subrefs'] = sorted(self.subrefs)
        return record

    @property
    def finished(self) -> bool:
        return self.success or self.failure

    @property
    def runtime(self) -> datetime.timedelta:
        return utcnow() - self.started

    def is_awakened(self, now: Optional[datetime.datetime] = None) -> bool:
        """Whether the handler can run now (not finished, not sleeping)."""
        if self.finished:
            return False
        now = now or utcnow()
        return self.delayed is None or self.delayed <= now

    def with_outcome(self, outcome: HandlerOutcome) -> HandlerState:
        now = utcnow()
        exc = outcome.exception
        return dataclasses.replace(
            self,
            retries=self.retries + 1,
            success=outcome.final and exc is None,
            failure=outcome.final and exc is not None,
            stopped=now if outcome.final else None,
            delayed=(now + datetime.timedelta(seconds=outcome.delay)
                     if outcome.delay is not None and not outcome.final else None),
            message=(str(exc) if exc is not None else None),
            subrefs=tuple(outcome.subrefs) or self.subrefs,
        )


# Upstream Kopf touches a dummy (``kopf.zalando.org/touch-dummy``) after sleeping for the
# delayed handlers, and removes it with its next patch. If it is stopped in between, the
# object keeps the dummy when we take over: it is removed together with our progress
# (``storage.touch(..., value=None)`` after storing or purging), so that it costs no
# request of its own. Nothing is added to the patch if there is no dummy.


class State(Dict[handlers.HandlerId, HandlerState]):
    """
    The states of all handlers relevant to one cause of one object, by the handlers' ids.

    A dict, so that the lookups of the engine and of the lifecycles (``state[handler.id]``)
    are the dict's own; treated as immutable: the ``with_*`` methods return new states.
    """

    def __init__(self, states: Mapping[handlers.HandlerId, HandlerState], *, purpose: Optional[str] = None):
        super().__init__(states)
        self.purpose = purpose

    @classmethod
    def from_storage(
            cls,
            *,
            body: bodies.Body,
            storage: progress.ProgressStorage,
            handlers_: Iterable[handlers.BaseHandler],
    ) -> State:
        states: Dict[handlers.HandlerId, HandlerState] = {}
        for handler in handlers_:
            record = storage.fetch(key=handler.id, body=body)
            if record is not None:
                states[handler.id] = HandlerState.from_record(record)
        return cls(states)

    def with_purpose(self, purpose: Optional[str], handlers_: Iterable[handlers.BaseHandler] = ()) -> State:
        """Start the missing handlers' states for this purpose (not-yet-run ones get retries=0)."""
        states = dict(self)
        for handler in handlers_:
            if handler.id not in states:
                states[handler.id] = HandlerState.from_scratch(purpose=purpose)
        return State(states, purpose=purpose)

    def due(self, handlers_: Sequence[handlers.BaseHandler]) -> tuple[State, Sequence[handlers.BaseHandler]]:
        """
        The states of every given handler (the missing ones started), and those of them due now.

        Due are the unfinished handlers that do not sleep (after a failure or a delay),
        in the given order.
        """
        state = self.with_purpose(self.purpose, handlers_)
        now = utcnow()
        due = [handler for handler in handlers_ if state[handler.id].is_awakened(now)]
        return state, due

    def with_outcomes(self, outcomes: Mapping[handlers.HandlerId, HandlerOutcome]) -> State:
        states = dict(self)
        for handler_id, outcome in outcomes.items():
            state = states.get(handler_id) or HandlerState.from_scratch(purpose=self.purpose)
            states[handler_id] = state.with_outcome(outcome)
        return State(states, purpose=self.purpose)

    def without(self, ids: Collection[str]) -> State:
        return State({k: v for k, v in self.items() if k not in ids}, purpose=self.purpose)

    def superseding_purposes(self, purpose: str) -> Collection[str]:
        """Purposes of unfinished records that differ from the current one."""
        return {s.purpose for s in self.values()
                if s.purpose is not None and s.purpose != purpose and not s.finished}

    def done_for(self, ids: Iterable[str]) -> bool:
        states = [self.get(handlers.HandlerId(i)) for i in ids]
        return all(state.finished for state in states if state is not None)

    def counts(self, ids: Iterable[str]) -> tuple[int, int, int]:
        """Succeeded, failed, and left-to-the-moment handlers among the given ids."""
        states = [self.get(handlers.HandlerId(i)) for i in ids]
        success = sum(1 for state in states if state is not None and state.success)
        failure = sum(1 for state in states if state is not None and state.failure)
        return success, failure, len(states) - success - failure

    def delays(self, ids: Iterable[str], now: Optional[datetime.datetime] = None) -> Sequence[float]:
        """Seconds until each unfinished handler can run again (0 if it can run now)."""
        now = now or utcnow()
        result = []
        for i in ids:
            state = self.get(handlers.HandlerId(i))
            if state is None or state.finished:
                continue
            result.append(max(0.0, (state.delayed - now).total_seconds()) if state.delayed else 0.0)
        return result

    def store(self, *, body: bodies.Body, patch: patches.Patch, storage: progress.ProgressStorage) -> None:
        """Write the records that changed since loading into the patch."""
        for handler_id, state in self.items():
            record = state.as_record()
            if record != state._origin:
                storage.store(key=handler_id, record=record, body=body, patch=patch)
        storage.touch(body=body, patch=patch, value=None)  # the dummy goes with our progress: see above

    def purge(
            self,
            *,
            body: bodies.Body,
            patch: patches.Patch,
            storage: progress.ProgressStorage,
            ids: Iterable[str],
    ) -> None:
        """Remove the records of all given ids and of their sub-handlers."""
        all_ids = set(ids) | set(self)
        for state in self.values():
            all_ids.update(state.subrefs)
        for handler_id in sorted(all_ids):
            storage.purge(key=handlers.HandlerId(handler_id), body=body, patch=patch)
        storage.touch(body=body, patch=patch, value=None)  # the dummy goes with our progress: see above

