"""
Mappings of resource selectors to values, as used in the settings.

``settings.watching.label_selectors`` and alike are keyed by resources written
the same way as in the handlers' decorators::

    settings.watching.label_selectors['v1/pods'] = 'app=web'
    settings.watching.label_selectors['batch', 'v1', 'jobs'] = 'app=web'
    settings.watching.label_selectors[kopf.EVERYTHING] = 'team=core'
    settings.watching.label_selectors[lambda r: r.group == 'apps'] = 'app=web'

The keys are kept as :class:`references.Selector` (iteration yields them), so that
the same resource written differently is the same key. The values of all keys
that match a real resource are collected by :meth:`SelectorMapping.collect`.
"""
from __future__ import annotations

from typing import Iterator, Mapping, MutableMapping, Optional, Tuple, TypeVar, Union

from kopf._cogs.structs import references

ValueT = TypeVar('ValueT')

SelectorKey = Union[
    references.Selector,
    references.SelectorName,
    references.SelectorFn,
    Tuple[references.SelectorName, ...],
]


def to_selector(key: object) -> references.Selector:
    """Interpret a key as the decorators interpret their positional arguments."""
    if isinstance(key, references.Selector):
        return key
    if isinstance(key, tuple):
        if not 1 <= len(key) <= 3:
            raise TypeError(f"A resource selector as a tuple takes 1 to 3 values "
                            f"(group, version, name), got {len(key)}: {key!r}.")
        return references.Selector(*key)
    if isinstance(key, (str, references.EverythingMarker)) or callable(key):
        return references.Selector(key)
    raise TypeError(f"Unsupported resource selector {key!r}: use a string ('v1/pods', 'kopfexamples'), "
                    f"a tuple ('batch', 'v1', 'jobs'), kopf.EVERYTHING, a callable that takes "
                    f"a kopf.Resource and returns a bool, or a selector object.")


class SelectorMapping(MutableMapping[SelectorKey, ValueT]):
    """A mapping of resource selectors to values, in insertion order."""

    def __init__(self, items: Optional[Mapping[SelectorKey, ValueT]] = None) -> None:
        super().__init__()
        self._items: dict[references.Selector, ValueT] = {}
        for key, value in (items or {}).items():
            self[key] = value

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self._items!r})'

    def __getitem__(self, key: SelectorKey) -> ValueT:
        return self._items[to_selector(key)]

    def __setitem__(self, key: SelectorKey, value: ValueT) -> None:
        self._items[to_selector(key)] = value

    def __delitem__(self, key: SelectorKey) -> None:
        del self._items[to_selector(key)]

    def __contains__(self, key: object) -> bool:
        return to_selector(key) in self._items

    def __iter__(self) -> Iterator[SelectorKey]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def collect(self, resource: references.Resource) -> list[ValueT]:
        """The values of all the selectors that match the resource, in insertion order."""
        return [value for selector, value in self._items.items() if selector.check(resource)]


def as_selector_mapping(value: object, *, what: str) -> SelectorMapping[object]:
    """A selector mapping as it is, any other mapping as a selector mapping, a false value (None) as an empty one."""
    if isinstance(value, SelectorMapping):
        return value
    if value and not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a mapping of resources to selectors, not {type(value).__name__}.")
    return SelectorMapping(value if isinstance(value, Mapping) else None)
