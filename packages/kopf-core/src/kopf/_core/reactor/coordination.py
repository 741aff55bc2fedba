"""
Coordination with other operators: runs the peering (see ``engines.peering``).

It decides the mode once at the start (standalone or peering), then keeps the
keep-alives going and follows the peering object's watch-stream, toggling
``operating``: set while this operator may serve the resources.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Collection, Dict, List

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.engines import peering
from kopf._core.reactor import watching

logger = logging.getLogger('kopf.reactor.peering')


async def coordinate(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        identity: str,
        namespaces: Collection[references.Namespace],
        operating: asyncio.Event,
        changed: asyncio.Event,
) -> None:
    """
    Run the peering until cancelled; or set ``operating`` and return in the standalone mode.

    ``changed`` is set whenever ``operating`` flips, for the orchestrator to follow.
    """
    if settings.peering.standalone:
        operating.set()
        changed.set()
        return
    scopes = [None] if settings.peering.clusterwide else list(namespaces)
    targets = await peering.find_targets(client=client, settings=settings, scopes=scopes)
    if not targets:
        if settings.peering.name == 'default':
            logger.warning("Default peering object is not found, falling back to the standalone mode.")
        else:
            logger.warning(f"Peering object {settings.peering.name!r} is not found, "
                           f"falling back to the standalone mode.")
        settings.peering.standalone = True
        operating.set()
        changed.set()
        return

    paused: Dict[peering.PeeringTarget, bool] = {target: False for target in targets}
    tasks: List[asyncio.Task[None]] = []
    try:
        for target in targets:
            tasks.append(asyncio.create_task(peering.keepalive(
                client=client, settings=settings, identity=identity, target=target)))
            tasks.append(asyncio.create_task(_observe(
                client=client, settings=settings, identity=identity, target=target,
                paused=paused, operating=operating, changed=changed)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        await asyncio.shield(peering.disappear(client=client, identity=identity, targets=targets))


async def _observe(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        identity: str,
        target: peering.PeeringTarget,
        paused: Dict[peering.PeeringTarget, bool],
        operating: asyncio.Event,
        changed: asyncio.Event,
) -> None:
    async for event in watching.continuous_watch(client=client, settings=settings,
                                                 resource=target.resource, namespace=target.namespace):
        body = event.get('object', {})
        if body.get('metadata', {}).get('name') != target.name or event.get('type') == 'DELETED':
            continue
        await peering.react(client=client, settings=settings, identity=identity, target=target, body=body,
                            paused=paused, operating=operating, changed=changed)
