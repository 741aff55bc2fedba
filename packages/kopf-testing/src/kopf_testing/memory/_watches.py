"""
The in-memory API's watches: the recorded changes, and what each watcher sees of them.
"""
import asyncio
import copy
import dataclasses
from typing import Optional

from kopf import clients
from kopf_testing.memory._objects import Key, Object
from kopf_testing.memory._resources import Served
from kopf_testing.memory._selectors import Matcher


@dataclasses.dataclass(frozen=True)
class Change:
    resource_version: int
    key: Key
    type: str  # ADDED, MODIFIED, DELETED
    obj: Object  # as after the change (for DELETED: as deleted, with the deletion's resourceVersion)
    previous: Optional[Object]  # as before the change (None if ADDED)


@dataclasses.dataclass(eq=False)
class Watcher:
    served: Served
    namespace: Optional[str]
    loop: asyncio.AbstractEventLoop
    queue: 'asyncio.Queue[clients.RawEvent]'
    matches: Matcher = lambda obj: True  # the selectors of the watch request

    def event_for(self, change: 'Change') -> Optional[clients.RawEvent]:
        """
        The event this watcher sees for a change, as the API server's watch cache filters it:
        an object that starts matching the selectors is ADDED, one that stops matching is
        DELETED (with its previous content and the change's resourceVersion).
        """
        now_in = change.type != 'DELETED' and self.matches(change.obj)
        was_in = change.previous is not None and self.matches(change.previous)
        if now_in:
            return {'type': 'MODIFIED' if was_in else 'ADDED', 'object': copy.deepcopy(change.obj)}
        if not was_in:
            return None
        if change.type == 'DELETED':
            return {'type': 'DELETED', 'object': copy.deepcopy(change.obj)}
        gone = copy.deepcopy(change.previous or change.obj)
        gone['metadata']['resourceVersion'] = str(change.resource_version)
        return {'type': 'DELETED', 'object': gone}
