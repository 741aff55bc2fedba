"""
Missing permissions of a watch-stream: said at once, retried, recovered from.

RBAC is often fixed while the operator runs (a Role is extended, a binding is
added). So a ``403 Forbidden`` of a listing or a watch does not end the
stream: it is logged as an error naming the verb and the resource (that is
what an administrator must grant), and retried with a growing delay, so that
the objects are served within seconds of the fix, without a restart, and the
API server is not hammered in the meantime.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional, Sequence

from kopf._cogs.aiokits import aioretries
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.structs import references

logger = logging.getLogger('kopf.reactor.permissions')

# Seconds between the attempts; the last one repeats for as long as the permission is missing.
FORBIDDEN_BACKOFFS: Sequence[float] = aioretries.BACKOFFS


class ForbiddenRetries:
    """The retrying state of one watch-stream: how many failures in a row, and what was refused."""

    def __init__(
            self,
            *,
            resource: references.Resource,
            namespace: references.Namespace,
            backoffs: Sequence[float] = FORBIDDEN_BACKOFFS,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.backoffs = backoffs
        self.failures = 0
        self.refused_verb: Optional[str] = None

    async def wait(self, verb: str, error: apierrors.APIForbiddenError) -> None:
        """Log the refusal and sleep until the next attempt."""
        delay = aioretries.backoff(self.failures, self.backoffs)
        self.failures += 1
        self.refused_verb = verb
        logger.error(f"The operator is forbidden to {verb} {self.resource.name} {self._where()}; "
                     f"retrying in {delay:g}s (attempt {self.failures}) until the permission is granted. "
                     f"The API says: {error}")
        await asyncio.sleep(delay)

    def succeeded(self, verb: str) -> None:
        """Note a successful request: if it was refused before, say that it works now."""
        if self.refused_verb == verb:
            logger.info(f"The operator is permitted to {verb} {self.resource.name} {self._where()} now; "
                        f"serving it after {self.failures} refusal(s).")
            self.failures = 0
            self.refused_verb = None

    def _where(self) -> str:
        return 'cluster-wide' if self.namespace is None else f'in namespace {self.namespace!r}'
