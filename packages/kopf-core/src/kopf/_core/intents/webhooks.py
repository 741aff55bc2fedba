"""
Admission handlers: ``@kopf.on.validate`` and ``@kopf.on.mutate``.

Unlike the other resource handlers, they are not invoked for watch-events
but for admission reviews, which the apiservers send to the operator's webhook
server before an object is stored. So they have no retries, no timeouts, and
no error modes: each review is answered at once. Their options describe the
webhook as Kubernetes sees it: which operations and subresources it gets, what
it does on failure, whether it outlives the operator.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import FrozenSet, Optional, TypeGuard

from kopf._cogs.structs import reviews
from kopf._core.intents import handlers

ALL_OPERATIONS: FrozenSet[reviews.Operation] = frozenset({'CREATE', 'UPDATE', 'DELETE', 'CONNECT'})


class WebhookType(str, enum.Enum):
    VALIDATING = 'validating'
    MUTATING = 'mutating'

    def __str__(self) -> str:
        return str(self.value)


@dataclasses.dataclass(frozen=True)
class WebhookHandler(handlers.ResourceHandler):
    """A validating or mutating admission handler."""
    type: Optional[WebhookType] = None
    operations: Optional[FrozenSet[reviews.Operation]] = None  # None means all
    subresource: Optional[str] = None  # None: the main body only; '*': the body and any subresource
    persistent: Optional[bool] = None
    side_effects: Optional[bool] = None
    ignore_failures: Optional[bool] = None
    KIND = 'Webhook'

    def accepts(self, *, operation: Optional[str], subresource: Optional[str]) -> bool:
        """Whether the handler is meant for this operation on this (sub)resource."""
        if self.operations is not None and operation not in self.operations:
            return False
        if self.subresource == '*':
            return True
        return (subresource or None) == self.subresource


def parse_operations(
        operation: Optional[str],
        operations: Optional[object],
) -> Optional[FrozenSet[reviews.Operation]]:
    """``operation=`` and ``operations=`` as one set (``None`` for all), validated."""
    if operation is not None and operations is not None:
        raise TypeError("Either operation= or operations= can be given, not both.")
    values: list[object]
    if operation is not None:
        values = [operation]
    elif operations is None:
        return None
    elif isinstance(operations, str) or not hasattr(operations, '__iter__'):
        raise TypeError(f"operations= must be a collection of operation names, got {operations!r}.")
    else:
        values = list(operations)
    if '*' in values:
        return None
    wrong = [value for value in values if not is_operation(value)]
    if wrong or not values:
        raise ValueError(f"Unknown admission operations {wrong!r}: use any of "
                         f"{', '.join(sorted(ALL_OPERATIONS))} (or None for all).")
    return frozenset(value for value in values if is_operation(value))


def is_operation(value: object) -> TypeGuard[reviews.Operation]:
    """Whether the value is one of the admission operations (the names, in upper case)."""
    return value in ALL_OPERATIONS
