"""
One step of the rate sweep: objects arriving at a steady rate while the operator is idle and watching.

Each rate gets a session of its own (a fresh namespace and operator process) for
every side, so that no step starts with another's backlog or objects. After the
schedule, the harness waits for the handlers' results up to :func:`drain_seconds`;
objects still without one count with that wait as a lower bound of their latency.
"""
import os
import time
from collections.abc import Awaitable

from benchmarks import arrivals, cluster
from benchmarks.scenarios.session import Figures, PhaseTimeout, Session, peak_rss_mib
from benchmarks.tracker import all_created

KIND_PREFIX = 'rate-'  # the runner's sessions of the sweep: "rate-5", "rate-2p5" (a namespace has no dots)
ANSWER_TIMEOUT_S = 60.0  # the API server's own limit for a request


def kind_of(rate: float) -> str:
    return KIND_PREFIX + f'{rate:g}'.replace('.', 'p')


def rate_of(kind: str) -> float:
    return float(kind.removeprefix(KIND_PREFIX).replace('p', '.'))


def drain_seconds(duration: float) -> float:
    """
    How long to wait for the results after the schedule: as long as the schedule, at least 10 s.

    A side that needs longer is far past its capacity at that rate (its p99 is at least this,
    ten times the threshold), and waiting for the whole backlog of a saturated side would make
    the sweep's duration unbounded.
    """
    return max(10.0, duration)


async def rate_step(session: Session, rate: float, duration: float) -> Figures:
    """Create objects on the schedule; wait for their results; the latencies, CPU and load of the step."""
    schedule = arrivals.Schedule(rate, duration)
    api, variant, namespace = session.api, session.variant, session.namespace
    operator = session.running
    names = [cluster.object_name(index) for index in range(schedule.count)]
    load_before = os.getloadavg()
    cpu_before, server_cpu_before = operator.cpu_seconds(), session.cluster.server_cpu_seconds()

    def create(index: int) -> Awaitable[object]:
        return api.create(variant.plural, namespace, cluster.object_body(variant, index, 'initial'))

    created = await arrivals.create_on_schedule(create, schedule, answer_timeout=ANSWER_TIMEOUT_S)
    answered = [names[arrival.index] for arrival in created if arrival.error is None]
    try:
        await session.until(all_created(answered), timeout=drain_seconds(duration))
    except PhaseTimeout:
        pass  # the objects without a result are counted as such, with their latencies as lower bounds
    ended = time.monotonic()
    cpu_s = operator.cpu_seconds() - cpu_before
    figures = arrivals.summarize(created, names=names, appeared=session.tracker.appeared,
                                 handled=session.tracker.creation_done,
                                 finalized=session.tracker.finalizer_added, ended=ended)
    figures.update({
        'rate': rate,
        'duration_s': duration,
        'schedule_s': created[-1].due - created[0].due,
        'drain_limit_s': drain_seconds(duration),
        'cpu_s': cpu_s,
        'cpu_per_object_ms': cpu_s / schedule.count * 1000,
        'server_cpu_per_object_ms': (session.cluster.server_cpu_seconds() - server_cpu_before) / schedule.count * 1000,
        'peak_rss_mib': peak_rss_mib(operator),
        'load_average_before': list(load_before),
        'load_average_after': list(os.getloadavg()),
        'first_error': next((arrival.error for arrival in created if arrival.error), None),
    })
    return figures

