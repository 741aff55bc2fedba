"""
Daemons and timers for the integration tests, selected per object by labels.

Each reports its lifecycle with the wall-clock time, so the tests can compare
it with the moments of their own actions.
"""
import asyncio
import logging
import time
from typing import Any

import kopf

logger = logging.getLogger('daemons')


@kopf.daemon('kopfexamples', labels={'daemon': 'sync'})
def sync_daemon(stopped: kopf.DaemonStopped, name: str, **_: Any) -> None:
    logger.info(f"sync daemon of {name} started at {time.time():.3f}")
    while not stopped:
        stopped.wait(10)
    logger.info(f"sync daemon of {name} stopped at {time.time():.3f} because {stopped.reason!r}")


@kopf.daemon('kopfexamples', labels={'daemon': 'async'})
async def async_daemon(stopped: kopf.DaemonStopped, name: str, **_: Any) -> None:
    logger.info(f"async daemon of {name} started at {time.time():.3f}")
    while not stopped:
        await stopped.wait(10)
    logger.info(f"async daemon of {name} stopped at {time.time():.3f} because {stopped.reason!r}")


@kopf.daemon('kopfexamples', labels={'daemon': 'stubborn'}, cancellation_backoff=0.5, cancellation_timeout=1.0)
async def stubborn_daemon(name: str, **_: Any) -> None:
    logger.info(f"stubborn daemon of {name} started at {time.time():.3f}")
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            logger.info(f"stubborn daemon of {name} ignores the cancellation at {time.time():.3f}")


@kopf.daemon('kopfexamples', labels={'watched': 'yes'})
async def filtered_daemon(stopped: kopf.DaemonStopped, name: str, **_: Any) -> None:
    logger.info(f"filtered daemon of {name} started at {time.time():.3f}")
    while not stopped:
        await stopped.wait(10)
    logger.info(f"filtered daemon of {name} stopped at {time.time():.3f} because {stopped.reason!r}")


@kopf.timer('kopfexamples', labels={'timer': 'idle'}, idle=3, interval=1)
def idle_timer(name: str, **_: Any) -> None:
    logger.info(f"idle timer of {name} ticked at {time.time():.3f}")


# As in Kopf 1.45.2: a callable initial_delay, a timer that runs again after a permanent failure,
# a timer without a schedule that runs once, and the live object as the default owner.

@kopf.timer('kopfexamples', labels={'timer': 'parity'}, interval=1,
            initial_delay=lambda spec, **_: spec.get('delay', 0))
def failing_timer(name: str, retry: int, **_: Any) -> None:
    logger.info(f"failing timer of {name} ran (retry {retry}) at {time.time():.3f}")
    raise kopf.PermanentError("failing for good, every time")


@kopf.timer('kopfexamples', labels={'timer': 'parity'})
def unscheduled_timer(name: str, **_: Any) -> None:
    logger.info(f"unscheduled timer of {name} ran at {time.time():.3f}")


@kopf.daemon('kopfexamples', labels={'timer': 'parity'})
async def adopting_daemon(stopped: kopf.DaemonStopped, name: str, **_: Any) -> None:
    while not await stopped.wait(0.5):
        child: dict[str, Any] = {'metadata': {}}
        kopf.adopt(child)
        logger.info(f"adopting daemon of {name} labels a child with {child['metadata'].get('labels')}")
