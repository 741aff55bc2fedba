"""
Type aliases shared across the framework.

Raw Kubernetes objects travel as plain JSON-like dicts; the aliases name what a
dict is meant to be so that signatures read as documentation.
"""
from __future__ import annotations

import logging
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Literal,
    Mapping,
    MutableMapping,
    Optional,
    TypeAlias,
    TypedDict,
    Union,
)

RawBody: TypeAlias = Dict[str, Any]
RawMeta: TypeAlias = Dict[str, Any]
RawPatch: TypeAlias = Mapping[str, Any]
JsonPatch: TypeAlias = List[Dict[str, Any]]
MutableRawBody: TypeAlias = MutableMapping[str, Any]

# The adapters of the framework's own loggers. The class is generic for the type checkers only:
# it cannot be subscripted at run time before Python 3.11.
if TYPE_CHECKING:
    LoggerAdapter: TypeAlias = logging.LoggerAdapter[logging.Logger]
else:
    LoggerAdapter = logging.LoggerAdapter

Logger: TypeAlias = Union[logging.Logger, LoggerAdapter]


# The type of a watch-event; ``None`` for the objects of the initial listing (they have no event).
RawEventType: TypeAlias = Literal[None, 'ADDED', 'MODIFIED', 'DELETED']


class RawEvent(TypedDict):
    """
    A watch-event as the API sends it: ``{"type": ..., "object": {...}}``.

    The type is one of :data:`RawEventType` in the events that the handlers see (``None``
    for the objects of the initial listing); the clients' watch-streams also carry
    ``"BOOKMARK"`` and ``"ERROR"`` events, which the framework consumes itself.
    """
    type: Optional[str]
    object: RawBody
