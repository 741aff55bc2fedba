"""
What every object's handling cycle gets, and what it gives back.

The context is made once per operator and shared by all cycles of all objects
(the processing of events, the change handlers' cycles); the result tells the
object's worker when to come back and which version our own patch produced.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs
from kopf._core.actions import lifecycles
from kopf._core.engines import indexing
from kopf._core.intents import registries
from kopf._core.reactor import inventory


@dataclasses.dataclass(frozen=True)
class ProcessingContext:
    """What is shared by all cycles of all objects of one operator."""
    registry: registries.OperatorRegistry
    settings: configuration.OperatorSettings
    client: protocols.ApiClient
    memories: inventory.ObjectMemories
    memo: Any
    indexers: indexing.OperatorIndexers
    lifecycle: Optional[lifecycles.LifeCycleFn] = None  # None is the default lifecycle (at each cycle)


@dataclasses.dataclass(frozen=True)
class CycleResult:
    """When to come back, and which version of the object our own patch produced."""
    delay: Optional[float] = None
    patched_body: Optional[typedefs.RawBody] = None
