"""
Conversion functions: ``@kopf.on.convert``.

A CRD with several versions stores its objects in one of them; when a client
reads or writes another one, the API server converts the objects. By itself,
it only rewrites ``apiVersion``; with a conversion webhook, it sends the
objects to the webhook in a ``ConversionReview`` and uses what comes back.

Each function converts the objects of one resource from one version to
another. A conversion with no function of its own goes through a chain of
them (v1→v2→v3), the shortest one, so that an operator with N versions needs
only the functions between the neighbouring versions, not N*(N-1) of them.

Like the admission handlers, they are called by the apiservers through the
webhook server, not for watch-events: no retries, no timeouts, no filters by
labels (an object that no function converts could not be read at all).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Collection, Dict, List, Optional, Sequence, Tuple

from kopf._cogs.structs import references
from kopf._core.intents import handlers


@dataclasses.dataclass(frozen=True)
class ConversionHandler(handlers.ResourceHandler):
    """A conversion function of one resource from the ``source`` version to the ``target`` one."""
    source: str = ''
    target: str = ''
    KIND = 'Conversion'


def check_versions(source: object, target: object) -> Tuple[str, str]:
    """The ``source=`` and ``target=`` versions, refused at decoration time if they cannot work."""
    for name, value in (('source', source), ('target', target)):
        if not isinstance(value, str) or not value:
            raise TypeError(f"@kopf.on.convert() needs {name}= as a version name (e.g. 'v1'), not {value!r}.")
        if '/' in value:
            raise ValueError(f"@kopf.on.convert() takes the version only in {name}= (e.g. "
                             f"{value.rsplit('/', 1)[-1]!r}), not {value!r}: the group is the resource's.")
    if source == target:
        raise ValueError(f"@kopf.on.convert() needs two different versions, not source=target={source!r}.")
    return str(source), str(target)


def check_selector(selector: references.Selector) -> None:
    """A conversion is between two versions of the same resource: the resource is named without one."""
    if selector.version is not None:
        raise ValueError(f"@kopf.on.convert() takes the resource without a version (got {selector.version!r}): "
                         f"the versions are source= and target=, e.g. "
                         f"@kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2').")


class ConversionRegistry:
    """The conversion functions, in the order of declaration: one per resource and pair of versions."""

    def __init__(self) -> None:
        self._handlers: List[ConversionHandler] = []

    def append(self, handler: ConversionHandler) -> None:
        for other in self._handlers:
            if other == handler:
                return  # the same function decorated twice is one function
            if (other.selector == handler.selector and other.fn is not handler.fn and
                    (other.source, other.target) == (handler.source, handler.target)):
                raise ValueError(f"The conversion of {handler.selector!r} from {handler.source!r} to "
                                 f"{handler.target!r} is already registered as {other.id!r}: "
                                 f"one function per pair of versions.")
        self._handlers.append(handler)

    def get_all_handlers(self) -> Collection[ConversionHandler]:
        return list(self._handlers)

    def get_all_selectors(self) -> Sequence[references.Selector]:
        selectors = (handler.selector for handler in self._handlers if handler.selector is not None)
        return list(dict.fromkeys(selectors))

    def find_chain(
            self,
            resource: references.Resource,
            *,
            source: str,
            target: str,
    ) -> Optional[Sequence[ConversionHandler]]:
        """
        The functions that convert the resource's objects from ``source`` to ``target``, in order.

        The shortest chain is found breadth-first over the functions of the
        resource; among several functions for the same pair of versions, the
        first declared one is used. ``None`` if there is no way at all.
        """
        edges: Dict[str, Dict[str, ConversionHandler]] = collections.defaultdict(dict)
        for handler in self._handlers:
            if handler.selector is not None and handler.selector.check(resource):
                edges[handler.source].setdefault(handler.target, handler)
        paths: Dict[str, List[ConversionHandler]] = {source: []}
        queue = collections.deque([source])
        while queue:
            version = queue.popleft()
            if version == target:
                return paths[version]
            for next_version, handler in edges[version].items():
                if next_version not in paths:
                    paths[next_version] = paths[version] + [handler]
                    queue.append(next_version)
        return None
