"""
The in-memory knowledge about the objects: only what must outlive one event.

An object's memory lives while the object exists (it is forgotten on the
DELETED event), so memory is bounded by what is watched. It never holds what
must survive a restart: that is stored on the object itself — except what the
object cannot keep (see ``remembering``).
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from kopf._cogs.structs import bodies
from kopf._core.actions import remembering
from kopf._core.engines.background import daemons as daemons_


@dataclasses.dataclass
class ObjectMemory:
    memo: Any
    uid: str = ''  # the fields that automatic sharding hashes: which objects moved to other replicas
    namespace: str = ''
    initial_pending: bool = False  # seen in the initial listing; resume handlers not yet done
    pending_fns: List[Any] = dataclasses.field(default_factory=list)  # patch.fns rejected by a conflict
    daemons: Optional[daemons_.DaemonsMemory] = None  # only for objects that have daemons or timers
    # What the storages have failed to keep on the object (e.g. in a pruned status).
    lost: remembering.LostState = dataclasses.field(default_factory=remembering.LostState)


class ObjectMemories:
    """The memories of all objects of all resources of one operator."""

    def __init__(self) -> None:
        self._items: Dict[str, ObjectMemory] = {}

    def __len__(self) -> int:
        return len(self._items)

    def recall(self, raw: Mapping[str, Any], *, memo: Any, initial: bool) -> ObjectMemory:
        """The object's memory; created on first sight with a shallow copy of the operator's memo."""
        key = bodies.object_key(raw)
        memory = self._items.get(key)
        if memory is None:
            meta = raw.get('metadata') or {}
            memory = ObjectMemory(memo=copy.copy(memo), initial_pending=initial,
                                  uid=str(meta.get('uid') or ''), namespace=str(meta.get('namespace') or ''))
            self._items[key] = memory
        return memory

    def find_memo(self, raw: Mapping[str, Any]) -> Optional[Any]:
        """The memo of a known object, without remembering an unknown one (e.g. for admission reviews)."""
        memory = self._items.get(bodies.object_key(raw))
        return memory.memo if memory is not None else None

    def forget(self, raw: Mapping[str, Any]) -> Optional[ObjectMemory]:
        return self._items.pop(bodies.object_key(raw), None)

    def forget_where(self, predicate: Callable[[ObjectMemory], bool]) -> List[str]:
        """Forget the memories that match; the keys of the objects forgotten."""
        keys = [key for key, memory in self._items.items() if predicate(memory)]
        for key in keys:
            del self._items[key]
        return keys

    def __iter__(self) -> Iterator[ObjectMemory]:
        return iter(list(self._items.values()))
