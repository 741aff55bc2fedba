"""An idle operator over many handled objects: the CPU it burns while nothing happens."""
import asyncio
import time

from benchmarks import metrics
from benchmarks.scenarios.session import Figures, Session, peak_rss_mib


async def idle(session: Session, seconds: float) -> Figures:
    operator = session.running
    before = await metrics.take_snapshot(session.api)
    cpu_before = operator.cpu_seconds()
    started = time.monotonic()
    deadline = started + seconds
    while (remaining := deadline - time.monotonic()) > 0:  # no polling of the API: it would be noise
        await asyncio.sleep(min(remaining, 1.0))
        operator.check_alive()
    cpu_s = operator.cpu_seconds() - cpu_before
    elapsed = time.monotonic() - started
    requests = metrics.attribute(before, await metrics.take_snapshot(session.api))
    return {
        'cpu_s': cpu_s,
        'cpu_percent': cpu_s / elapsed * 100,
        'requests': requests,
        'requests_total': metrics.total(requests, watches=False),
        'peak_rss_mib': peak_rss_mib(operator),
    }
