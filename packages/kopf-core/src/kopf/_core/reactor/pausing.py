"""
Pausing: while the operator does not operate, neither do the daemons and timers of its objects.

The operator stops operating when the peering pauses it (a peer with a higher
priority, ``kopf freeze``) or when it does not hold the leader election's
Lease. Its watch-streams stop then (see ``orchestration``), and its daemons and
timers are asked to stop here, with their usual stopping procedure (backoffs,
timeouts). They are spawned again by the objects' cycles when the operator
operates again and its watch-streams list the objects anew.

The cycles still finishing when the pause begins may spawn daemons after the
first sweep: the sweeps repeat every second while the pause lasts.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Optional

from kopf._cogs.aiokits import aiowaiting
from kopf._core.engines.background import daemons, stoppers
from kopf._core.reactor import inventory

# How often the daemons spawned by the finishing cycles are stopped again while the operator is paused.
SWEEP_INTERVAL = 1.0


class DaemonsPauser:
    """Keeps the daemons and timers stopped while ``operating`` is cleared (``pause()`` starts it)."""

    def __init__(
            self,
            *,
            memories: inventory.ObjectMemories,
            operating: asyncio.Event,
            context_of: Callable[[daemons.DaemonsMemory], daemons.DaemonContext],
    ) -> None:
        self.memories = memories
        self.operating = operating
        self.context_of = context_of
        self.task: Optional[asyncio.Task[None]] = None

    def pause(self) -> None:
        """The operator stops operating: stop its daemons now and for as long as the pause lasts."""
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._sweep(), name='daemons pauser')

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.wait([self.task])

    async def _sweep(self) -> None:
        while not self.operating.is_set():
            for memory in list(self.memories):
                if memory.daemons is not None:
                    daemons.stop_daemons(memory=memory.daemons, reason=stoppers.DaemonStoppingReason.OPERATOR_PAUSING,
                                         context=self.context_of(memory.daemons))
            await aiowaiting.wait_event(self.operating, SWEEP_INTERVAL)
