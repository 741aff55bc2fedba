"""
An operator embedded into an application that goes on after the operator exits (on SIGTERM).

The application must not be killed by ``settings.process.ultimate_exiting_timeout``
once the operator has exited in time: it prints a line after outliving the timeout.
"""
import asyncio
import sys
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, logger: Any, **_: Any) -> None:
    settings.process.ultimate_exiting_timeout = 1.0
    logger.info("Configured.")


async def main() -> None:
    await kopf.operator(namespaces=[sys.argv[1]], standalone=True)
    await asyncio.sleep(3)  # longer than the ultimate exiting timeout
    print("The application has outlived the timeout.", flush=True)


if __name__ == '__main__':
    kopf.configure(verbose=True)
    asyncio.run(main())
