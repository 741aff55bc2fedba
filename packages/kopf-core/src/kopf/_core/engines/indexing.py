"""
In-memory indices: per-operator overviews of resources, kept by indexing functions.

An index maps keys to stores; a store holds the values that the indexing
function returned for the objects under that key. Every object's contribution
is remembered by the object's identity, so that an update replaces it and a
deletion (or a filter mismatch) removes it in O(k) for its k keys, regardless
of the index's size; empty stores are removed.

Indexing runs right in the watch-stream, before the events are queued for the
objects' workers: so the indices are complete after the initial listing even
if the workers are limited (a worker waiting for the indices never blocks the
indexing itself).
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Collection, Dict, Generic, Hashable, Iterator, Mapping, Optional, Set, TypeVar

from kopf._core.actions import errors, execution, progression
from kopf._core.intents import handlers, matching, registries

_K = TypeVar('_K')
_V = TypeVar('_V')

ObjectKey = str


class Store(Collection[_V], Generic[_V]):
    """All values under one index key: one per contributing object (in no specific order)."""

    def __init__(self) -> None:
        self._items: Dict[ObjectKey, _V] = {}

    def __repr__(self) -> str:
        return repr(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[_V]:
        return iter(self._items.values())

    def __contains__(self, obj: object) -> bool:
        return any(value == obj for value in self._items.values())


class Index(Mapping[_K, Store[_V]], Generic[_K, _V]):
    """A read-only mapping of index keys to the stores of values under those keys."""

    def __init__(self) -> None:
        self._items: Dict[_K, Store[_V]] = {}

    def __repr__(self) -> str:
        return repr(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[_K]:
        return iter(self._items)

    def __getitem__(self, key: _K) -> Store[_V]:
        return self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items


class OperatorIndex:
    """The writable side of one index (users get only the read-only ``Index``)."""

    def __init__(self) -> None:
        self.index: Index[Any, Any] = Index()
        self._keys_of: Dict[ObjectKey, Set[Hashable]] = {}

    def replace(self, obj: ObjectKey, result: Any) -> None:
        """Put the object's new result in place of its previous one (``dict`` results are keyed)."""
        self.remove(obj)
        # Strictly dict: other mappings (even kopf.Memo) are values, under the None key.
        items = result.items() if type(result) is dict else [(None, result)]
        keys: Set[Hashable] = set()
        for key, value in items:
            store = self.index._items.get(key)
            if store is None:
                store = self.index._items[key] = Store()
            store._items[obj] = value
            keys.add(key)
        if keys:
            self._keys_of[obj] = keys

    def remove(self, obj: ObjectKey) -> None:
        for key in self._keys_of.pop(obj, ()):
            store = self.index._items.get(key)
            if store is not None:
                store._items.pop(obj, None)
                if not store._items:
                    del self.index._items[key]


@dataclasses.dataclass
class _Exclusion:
    """The in-memory retrying state of one object in one index after errors."""
    state: progression.HandlerState
    until: Optional[float] = None  # monotonic time; None means forever


class OperatorIndexers:
    """All indices of one operator, and the indexing of the objects' events into them."""

    def __init__(self) -> None:
        self.indices: Dict[str, OperatorIndex] = {}
        self._exclusions: Dict[tuple[str, ObjectKey], _Exclusion] = {}
        self.ready = asyncio.Event()  # set once the initial listings are indexed (see IndexingReadiness)

    def ensure(self, registry: registries.OperatorRegistry) -> None:
        """Create the (empty) indices of all declared indexing functions: they exist from the start."""
        for name in registry.index_names:
            self.indices.setdefault(name, OperatorIndex())

    def as_kwargs(self) -> Dict[str, Index[Any, Any]]:
        return {name: index.index for name, index in self.indices.items()}

    def forget(self, obj: ObjectKey) -> None:
        for name, index in self.indices.items():
            index.remove(obj)
            self._exclusions.pop((name, obj), None)

    async def index_object(
            self,
            *,
            obj: ObjectKey,
            handlers_: Collection[handlers.IndexingHandler],
            kwargs: Mapping[str, Any],
            body: Mapping[str, Any],
            context: execution.ExecutionContext,
    ) -> None:
        """Run the indexing functions for the object's current state; apply the error modes."""
        for handler in handlers_:
            index = self.indices.setdefault(handler.id, OperatorIndex())
            if not matching.match_resource_filters(handler, body=body, kwargs=kwargs):
                index.remove(obj)  # stopped matching: its values are gone
                continue
            exclusion = self._exclusions.get((handler.id, obj))
            if exclusion is not None:
                if exclusion.until is None or exclusion.until > asyncio.get_running_loop().time():
                    continue
            state = exclusion.state if exclusion is not None else progression.HandlerState.from_scratch()
            outcome = await execution.execute_handler_once(
                handler=handler, state=state, context=context, default_errors=handlers.ErrorsMode.IGNORED)
            self._apply_outcome(index=index, handler=handler, obj=obj, state=state, outcome=outcome)

    def _apply_outcome(
            self,
            *,
            index: OperatorIndex,
            handler: handlers.IndexingHandler,
            obj: ObjectKey,
            state: progression.HandlerState,
            outcome: progression.HandlerOutcome,
    ) -> None:
        key = (handler.id, obj)
        if outcome.exception is None:
            self._exclusions.pop(key, None)  # success resets the retrying state (not stored)
            if outcome.result is not None:
                index.replace(obj, outcome.result)
            return
        if outcome.final:
            ignored = (handler.errors in (None, handlers.ErrorsMode.IGNORED)
                       and not isinstance(outcome.exception, errors.PermanentError))
            if ignored:
                return  # IGNORED: the stale values stay
            index.remove(obj)
            self._exclusions[key] = _Exclusion(state=state.with_outcome(outcome), until=None)  # forever
            return
        index.remove(obj)
        delay = outcome.delay or 0
        until = asyncio.get_running_loop().time() + delay
        self._exclusions[key] = _Exclusion(state=state.with_outcome(outcome), until=until)


class IndexingReadiness:
    """Opens the gate for the handlers once every indexed stream of the start has been listed."""

    def __init__(self, indexers: OperatorIndexers) -> None:
        self._indexers = indexers
        self._expected: Optional[Set[Hashable]] = None
        self._listed: Set[Hashable] = set()

    def expect(self, keys: Collection[Hashable]) -> None:
        """The streams that must be listed before the gate opens (only the first call counts)."""
        if self._expected is None:
            self._expected = set(keys)
            self._check()

    def mark_listed(self, key: Hashable) -> None:
        self._listed.add(key)
        self._check()

    def _check(self) -> None:
        if self._expected is not None and self._expected <= self._listed:
            self._indexers.ready.set()


