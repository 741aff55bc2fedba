"""
Type aliases shared across the framework.

Raw Kubernetes objects travel as plain JSON-like dicts; the aliases name what a
dict is meant to be so that signatures read as documentation.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Literal, Mapping, MutableMapping, TypeAlias, TypedDict, Union

RawBody: TypeAlias = Dict[str, Any]
RawMeta: TypeAlias = Dict[str, Any]
RawPatch: TypeAlias = Mapping[str, Any]
JsonPatch: TypeAlias = List[Dict[str, Any]]
MutableRawBody: TypeAlias = MutableMapping[str, Any]

Logger: TypeAlias = Union[logging.Logger, logging.LoggerAdapter]  # type: ignore[type-arg]


# The type of a watch-event; ``None`` for the objects of the initial listing (they have no event).
RawEventType: TypeAlias = Literal[None, 'ADDED', 'MODIFIED', 'DELETED']


class RawEvent(TypedDict):
    """A watch-event as the API sends it: ``{"type": ..., "object": {...}}``."""
    type: str
    object: RawBody
