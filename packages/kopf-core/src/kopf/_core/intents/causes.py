"""
Causes: why the handlers are going to be called for an object.

A watch-event is low-level ("the object is now like this"); a cause is what
it means for the handlers ("it was created", "it is being deleted", "the
operator has restarted and sees it again"). The reason is detected from the
object's own state only (the diff-base, the deletion mark, the finalizers),
never from the in-memory history, so that it survives operator restarts.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Optional

from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, diffs, patches, references


class Reason(str, enum.Enum):
    """The reason of a change-handling cycle (also the progress "purpose")."""
    CREATE = 'create'
    UPDATE = 'update'
    DELETE = 'delete'
    RESUME = 'resume'
    NOOP = 'noop'
    FREE = 'free'
    GONE = 'gone'

    def __str__(self) -> str:
        return str(self.value)


# The reasons for which the changing handlers are invoked (others are housekeeping).
HANDLER_REASONS = frozenset({Reason.CREATE, Reason.UPDATE, Reason.DELETE, Reason.RESUME})

# The titles used in the log lines ("Creation is in progress: ...").
TITLES = {
    Reason.CREATE: 'Creation',
    Reason.UPDATE: 'Updating',
    Reason.DELETE: 'Deletion',
    Reason.RESUME: 'Resuming',
}

# The words used in "All handlers succeeded for creation."
NOUNS = {
    Reason.CREATE: 'creation',
    Reason.UPDATE: 'update',
    Reason.DELETE: 'deletion',
    Reason.RESUME: 'resuming',
}


@dataclasses.dataclass
class BaseCause:
    """What is common to all causes: the object and the means to act on it."""
    resource: references.Resource
    body: bodies.Body
    patch: patches.Patch
    memo: Any
    logger: typedefs.Logger
    indices: Any = None


@dataclasses.dataclass
class WatchingCause(BaseCause):
    """A raw watch-event: for ``@kopf.on.event`` handlers."""
    type: Optional[str] = None  # None for the initial listing
    event: Any = None


@dataclasses.dataclass
class ChangingCause(BaseCause):
    """A detected change of the object's essence: for the change handlers."""
    reason: Reason = Reason.NOOP
    initial: bool = False
    diff: diffs.Diff = dataclasses.field(default_factory=lambda: diffs.Diff([]))
    old: Optional[Any] = None
    new: Optional[Any] = None

    @property
    def deleted(self) -> bool:
        """Whether the object is marked for deletion (and handled as such)."""
        return self.reason == Reason.DELETE


def detect_changing_reason(
        *,
        finalizer: str,
        raw_event_type: Optional[str],
        body: bodies.Body,
        old: Optional[Any],
        diff: diffs.Diff,
        initial: bool,
) -> Reason:
    """
    Detect the reason of the change from the object's current state.

    The order matters: deletion outranks everything (an object being deleted is
    never "created"); an absent diff-base means the object was never handled,
    so it is a creation even if the operator has just started; a resume is an
    otherwise unchanged object seen for the first time by this operator process.
    """
    if raw_event_type == 'DELETED':
        return Reason.GONE
    if body.meta.deletion_timestamp is not None:
        return Reason.DELETE if finalizer in body.meta.get('finalizers', []) else Reason.FREE
    if old is None:
        return Reason.CREATE
    if diff:
        return Reason.UPDATE
    if initial:
        return Reason.RESUME
    return Reason.NOOP
