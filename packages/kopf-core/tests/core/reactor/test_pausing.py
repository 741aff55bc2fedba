"""
Pausing: while the operator does not operate (a peering pause, no Lease held), its daemons stop.

Inputs: an object's memory with a real daemon spawned by the engine, the
``operating`` event cleared and set. Outputs: whether the daemon runs, and why
it was stopped. The time is fake (looptime). Not mocked: the daemons' engine.
"""
import asyncio
import logging
from typing import Any, List

import pytest

import kopf
from kopf._cogs.structs import bodies
from kopf._core.engines.background import daemons, stoppers
from kopf._core.intents import handlers
from kopf._core.reactor import inventory, pausing

logger = logging.getLogger('test')


def context(_: Any = None) -> daemons.DaemonContext:
    async def apply_patch(_: Any) -> None:
        pass
    return daemons.DaemonContext(settings=kopf.OperatorSettings(), logger=logger, memo=kopf.Memo(),
                                 build_kwargs=lambda h, s, p, b: dict(logger=logger), apply_patch=apply_patch,
                                 pending_fns=[])


@pytest.mark.looptime
async def test_daemons_stop_on_a_pause_and_those_spawned_meanwhile_too() -> None:
    runs: List[float] = []
    reasons: List[stoppers.DaemonStoppingReason] = []

    async def beating(stopped: Any, **_: Any) -> None:
        runs.append(asyncio.get_running_loop().time())
        await stopped.wait()
        reasons.append(stopped.reason)

    handler = handlers.DaemonHandler(fn=beating, id=handlers.HandlerId('beating'), param=None, errors=None,
                                     timeout=None, retries=None, backoff=None)
    memories = inventory.ObjectMemories()
    memory = memories.recall({'metadata': {'uid': 'u1', 'name': 'obj'}}, memo=kopf.Memo(), initial=True)
    memory.daemons = daemons.DaemonsMemory(body=bodies.Body({'metadata': {'name': 'obj'}}))
    operating = asyncio.Event()
    pauser = pausing.DaemonsPauser(memories=memories, operating=operating, context_of=context)

    pauser.pause()
    await asyncio.sleep(0.5)
    daemons.spawn_daemons(memory=memory.daemons, matching=[handler], context=context())  # a finishing cycle
    await asyncio.sleep(1)
    assert len(runs) == 1 and reasons == [stoppers.DaemonStoppingReason.OPERATOR_PAUSING]

    operating.set()  # resumed: the cycles spawn the daemons again, and nobody stops them
    await asyncio.sleep(0.1)
    daemons.spawn_daemons(memory=memory.daemons, matching=[handler], context=context())
    await asyncio.sleep(5)
    assert len(runs) == 2 and len(reasons) == 1
    await pauser.close()
    daemons.stop_daemons(memory=memory.daemons, reason=stoppers.DaemonStoppingReason.OPERATOR_EXITING,
                         context=context())
    await asyncio.wait([daemon.task for daemon in memory.daemons.running.values()])


async def test_closing_an_idle_pauser_does_nothing() -> None:
    pauser = pausing.DaemonsPauser(memories=inventory.ObjectMemories(), operating=asyncio.Event(),
                                   context_of=context)
    await pauser.close()
    assert pauser.task is None
