"""
Many objects already handled; the operator started over them.

The objects are created with no operator running, then handled once by the
same side's operator (the ``initial_*`` figures), which is stopped; the next
start is the measured restart: until the operator is idle, having changed nothing.
"""
import time

from benchmarks import cluster, metrics
from benchmarks.scenarios.session import Figures, Session, peak_rss_mib
from benchmarks.tracker import all_created


async def prepare(session: Session, objects: int) -> Figures:
    """Create the objects and let the operator handle them once; it is stopped afterwards."""
    api, variant, namespace = session.api, session.variant, session.namespace
    names = await cluster.create_objects(api, variant, namespace, objects, field='initial',
                                         concurrency=session.settings.concurrency)
    timeout = session.settings.timeout_for(objects)
    server_cpu_before = session.cluster.server_cpu_seconds()
    operator = await session.start_operator()
    done = await session.until(all_created(names), timeout=timeout)
    await session.idle(all_created(names), timeout=timeout)
    figures = {'initial_wall_s': done - operator.started_at, 'initial_cpu_s': operator.cpu_seconds(),
               'initial_server_cpu_s': session.cluster.server_cpu_seconds() - server_cpu_before}
    await session.stop_operator()
    return figures


async def restart(session: Session, objects: int) -> Figures:
    """Start the operator again; the figures until it is idle (it stays running for ``idle``)."""
    names = [cluster.object_name(index) for index in range(objects)]
    operator = await session.start_operator()
    before = session.before_start
    assert before is not None
    last_activity = await session.idle(all_created(names), timeout=session.settings.timeout_for(objects),
                                       require_requests=True)
    cpu_s = operator.cpu_seconds()
    requests = metrics.attribute(before, await metrics.take_snapshot(session.api))
    return {
        'wall_s': last_activity - operator.started_at,
        'detected_idle_after_s': time.monotonic() - operator.started_at,
        'cpu_s': cpu_s,
        'peak_rss_mib': peak_rss_mib(operator),
        'requests': requests,
        'requests_total': metrics.total(requests, watches=False),
    }
