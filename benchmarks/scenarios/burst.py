"""Many objects at once, with the operator idle and watching: created, then updated, then deleted."""
import collections
import math
from collections.abc import Sequence

from benchmarks import cluster, metrics
from benchmarks.scenarios.session import Figures, Session, peak_rss_mib
from benchmarks.tracker import all_created, all_gone, all_updated

PHASES = ('create', 'update', 'delete')


async def burst(session: Session, objects: int) -> Figures:
    api, variant, namespace = session.api, session.variant, session.namespace
    concurrency = session.settings.concurrency
    names = [cluster.object_name(index) for index in range(objects)]
    create = await session.phase(
        lambda: cluster.create_objects(api, variant, namespace, objects, field='initial', concurrency=concurrency),
        all_created(names), objects=objects)
    latencies = session.tracker.creation_latencies(names)
    finalizer_latencies = session.tracker.finalizer_latencies(names)
    update = await session.phase(
        lambda: cluster.update_objects(api, variant, namespace, names, field='updated', concurrency=concurrency),
        all_updated(names, 'updated'), objects=objects)
    delete = await session.phase(
        lambda: cluster.delete_objects(api, variant, namespace, names, concurrency=concurrency),
        all_gone(names), objects=objects)

    phases = dict(zip(PHASES, (create, update, delete), strict=True))
    requests: collections.Counter[str] = collections.Counter()
    for phase in phases.values():
        requests.update(phase['requests'])
    cpu_s = sum(phase['cpu_s'] for phase in phases.values())
    server_cpu_s = sum(phase['server_cpu_s'] for phase in phases.values())
    figures: Figures = {f'{name}_{key}': phase[key] for name, phase in phases.items()
                        for key in ('wall_s', 'action_s', 'until_idle_s', 'cpu_s')}
    figures.update({
        'wall_s': sum(phase['wall_s'] for phase in phases.values()),
        'cpu_s': cpu_s,
        'cpu_per_object_ms': cpu_s / objects * 1000,
        'server_cpu_per_object_ms': server_cpu_s / objects * 1000,
        'requests': dict(sorted(requests.items())),
        'requests_per_object': metrics.total(requests, watches=False) / objects,
        'events_per_object': metrics.events_posted(requests) / objects,
        'peak_rss_mib': peak_rss_mib(session.running),
        'create_latency_p50_ms': percentile(latencies, 50) * 1000,
        'create_latency_p99_ms': percentile(latencies, 99) * 1000,
        'finalizer_latency_p50_ms': percentile(finalizer_latencies, 50) * 1000,
        'finalizer_latency_p99_ms': percentile(finalizer_latencies, 99) * 1000,
        # The whole distribution, for the pictures: the latency at each percent of the objects (0: the fastest).
        'create_latency_cdf_ms': [round(percentile(latencies, share) * 1000, 1) for share in range(101)],
    })
    return figures


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``share`` % of the values at or below it."""
    if not values:
        raise ValueError('No values to take a percentile of.')
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share / 100 * len(ordered)) - 1)]
