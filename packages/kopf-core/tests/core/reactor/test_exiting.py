"""
``settings.process.ultimate_exiting_timeout``: the kill of a stuck exit, on fake loop time.

The kill itself is a stand-in that records the loop time (a real SIGKILL would end the tests).
"""
import asyncio
from typing import List, Optional

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.reactor import exiting


@pytest.mark.looptime
@pytest.mark.parametrize('timeout', [1.5, 600])
async def test_the_kill_comes_after_the_timeout(timeout: float) -> None:
    settings = OperatorSettings()
    settings.process.ultimate_exiting_timeout = timeout
    loop = asyncio.get_running_loop()
    kills: List[float] = []
    start = loop.time()
    exiting.arm_ultimate_exit(settings, kill=lambda: kills.append(loop.time() - start))
    await asyncio.sleep(timeout + 1)
    assert kills == [timeout]


@pytest.mark.looptime
async def test_no_kill_without_a_timeout() -> None:
    settings = OperatorSettings()
    settings.process.ultimate_exiting_timeout = None
    kills: List[Optional[float]] = []
    assert exiting.arm_ultimate_exit(settings, kill=lambda: kills.append(None)) is None
    await asyncio.sleep(10 * 60 * 60)
    assert kills == []


def test_the_default_is_ten_minutes() -> None:
    assert OperatorSettings().process.ultimate_exiting_timeout == 600
