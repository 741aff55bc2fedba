"""
An operator whose startup handler keeps failing temporarily: it never starts serving.

Stopping it (a signal, or the stop-flag when embedded) must not wait for the handler
to succeed: the startup is interrupted, and the cleanup handlers still run.
With an argument (a namespace), it runs embedded and sets the stop-flag itself after
the third attempt of the startup handler.
"""
import asyncio
import sys
import threading
from typing import Any

import kopf

attempts = threading.Event()


@kopf.on.startup()
def never_ready(retry: int, logger: Any, **_: Any) -> None:
    logger.info(f"Startup attempt #{retry}.")
    if retry >= 2:
        attempts.set()
    raise kopf.TemporaryError("The dependency is not ready yet.", delay=1)


@kopf.on.cleanup()
def cleanup_fn(logger: Any, **_: Any) -> None:
    logger.info("Cleaned up.")


async def main(namespace: str) -> None:
    stop_flag = asyncio.Event()
    operator = asyncio.create_task(kopf.operator(namespaces=[namespace], standalone=True, stop_flag=stop_flag))
    await asyncio.get_running_loop().run_in_executor(None, attempts.wait)
    stop_flag.set()
    await operator
    print("The embedded operator has returned.", flush=True)


if __name__ == '__main__':
    kopf.configure(verbose=True)
    asyncio.run(main(sys.argv[1]))
