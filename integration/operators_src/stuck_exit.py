"""
An operator whose cleanup handler never finishes: its exit gets stuck.

``$TEST_ULTIMATE_EXITING_TIMEOUT`` sets ``settings.process.ultimate_exiting_timeout``.
"""
import asyncio
import os
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, logger: Any, **_: Any) -> None:
    settings.process.ultimate_exiting_timeout = float(os.environ['TEST_ULTIMATE_EXITING_TIMEOUT'])
    logger.info("Configured.")


@kopf.on.cleanup()
async def stuck_fn(logger: Any, **_: Any) -> None:
    logger.info("Cleaning up forever.")
    await asyncio.Event().wait()
