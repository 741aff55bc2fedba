"""
``settings.background``: the moment given to daemons to exit when asked to stop
(``instant_exit_*``), and the polling of those that do not (``cancellation_polling``).

The "daemons" are plain tasks that need a few loop cycles or some (fake) seconds to exit:
whether they are done after the wait shows how long the wait was.
"""
import asyncio
import logging
from typing import Any, Optional, cast

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.bodies import Body
from kopf._core.engines.background import daemons, stoppers
from kopf._core.intents.handlers import DaemonHandler, HandlerId


async def exit_after_cycles(cycles: int) -> None:
    for _ in range(cycles):
        await asyncio.sleep(0)


def memory_of(task: asyncio.Task[None]) -> daemons.DaemonsMemory:
    daemon = daemons.Daemon(handler=cast(Any, None), stopper=cast(Any, None), task=task)
    return daemons.DaemonsMemory(body=Body({}), running={HandlerId('fn'): daemon})


@pytest.mark.parametrize('cycles, exits_in, expected', [
    pytest.param(10, 3, True, id='enough-cycles'),
    pytest.param(2, 3, False, id='too-few-cycles'),
    pytest.param(0, 1, False, id='zero-cycles'),
    pytest.param(None, 1, False, id='disabled'),
])
async def test_zero_time_cycles(cycles: Optional[int], exits_in: int, expected: bool) -> None:
    settings = OperatorSettings()
    settings.background.instant_exit_zero_time_cycles = cycles
    task = asyncio.create_task(exit_after_cycles(exits_in))
    await daemons.wait_for_instant_exit(memory_of(task), settings=settings)
    assert task.done() is expected
    await task


@pytest.mark.looptime
@pytest.mark.parametrize('exits_in, expected', [pytest.param(0.5, True, id='in-time'),
                                                pytest.param(2.0, False, id='too-late')])
async def test_timeout_wins_over_the_cycles(exits_in: float, expected: bool) -> None:
    settings = OperatorSettings()
    settings.background.instant_exit_timeout = 1.0
    settings.background.instant_exit_zero_time_cycles = 1000
    task = asyncio.create_task(asyncio.sleep(exits_in))
    start = asyncio.get_running_loop().time()
    await daemons.wait_for_instant_exit(memory_of(task), settings=settings)
    assert task.done() is expected
    assert asyncio.get_running_loop().time() - start == (exits_in if expected else 1.0)
    await task


# The polling of daemons that do not exit (``settings.background.cancellation_polling``).

async def forever() -> None:
    await asyncio.Event().wait()


@pytest.mark.looptime(start=0)
@pytest.mark.parametrize('polling, expected_warnings', [(60, 2), (20, 6)])
async def test_daemons_that_do_not_exit_are_reported_every_polling_interval(
        caplog: pytest.LogCaptureFixture, polling: float, expected_warnings: int) -> None:
    settings = OperatorSettings()
    settings.background.cancellation_polling = polling
    handler = DaemonHandler(fn=lambda **_: None, id=HandlerId('fn'), param=None, errors=None, timeout=None,
                            retries=None, backoff=None)  # no cancellation_timeout: waited forever
    stopper = stoppers.DaemonStopper()
    stopper.bind()
    task = asyncio.create_task(forever())  # a daemon that ignores its stopper
    daemon = daemons.Daemon(handler=handler, stopper=stopper, task=task)
    context = daemons.DaemonContext(settings=settings, logger=logging.getLogger('kopf.objects'), memo=None,
                                    build_kwargs=cast(Any, None), apply_patch=cast(Any, None), pending_fns=[])
    daemons.request_stop(daemon, reason=stoppers.DaemonStoppingReason.RESOURCE_DELETED, context=context)
    await asyncio.sleep(130)
    warnings = [message for message in caplog.messages if "has not exited yet" in message]
    assert len(warnings) == expected_warnings
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert daemon.terminator is not None
    await daemon.terminator
