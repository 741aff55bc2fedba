"""
Handlers for the faults of the observation: an API outage, and CRDs deleted mid-handling.

The client's retries are made short (startup handler), so that an outage of a
few seconds outlasts them and reaches the observation of resources. The dying
resource's create handler is slow, so that its CRD is deleted mid-handling.
"""
import asyncio
from typing import Any

import kopf

STABLE = 'stables.outage.kopf.dev'
DYING = 'dyings.outage.kopf.dev'


@kopf.on.startup()
def short_retries(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.networking.error_backoffs = [0.2, 0.2]


@kopf.on.create(STABLE)
def stable_fn(logger: Any, name: str, **_: Any) -> dict[str, str]:
    logger.info(f"stable_fn handled {name}")
    return {'handled': name}


@kopf.on.create(DYING)
async def dying_create_fn(**_: Any) -> None:
    await asyncio.sleep(3)


@kopf.on.delete(DYING)
def dying_delete_fn(logger: Any, uid: str, **_: Any) -> None:
    logger.info(f"dying_delete_fn handled {uid}")
