"""
No operator at all: the harness's churn alone, to check the attribution of requests.

Whatever remains of the API server's deltas after subtracting the harness's
own tally is what the method would wrongly attribute to an operator; it must
be ~0 (a few background requests of the control plane at most).
"""
import asyncio

from benchmarks import cluster, metrics
from benchmarks.kubeapi import KubeApi
from benchmarks.scenarios.session import Figures, Settings
from benchmarks.tracker import ObjectTracker, all_gone

_SETTLE = 1.0  # for the API server to record the requests just answered (and the watch just closed)


async def baseline(api: KubeApi, variant: cluster.Variant, namespace: str, objects: int, settings: Settings) -> Figures:
    await api.create_namespace(namespace)
    try:
        before = await metrics.take_snapshot(api)
        async with ObjectTracker(api, variant.plural, namespace) as tracker:
            names = await cluster.create_objects(api, variant, namespace, objects, field='initial',
                                                 concurrency=settings.concurrency)
            await tracker.wait_for(lambda states: all(name in states for name in names),
                                   timeout=settings.timeout_for(objects))
            await cluster.update_objects(api, variant, namespace, names, field='updated',
                                         concurrency=settings.concurrency)
            await cluster.delete_objects(api, variant, namespace, names, concurrency=settings.concurrency)
            await tracker.wait_for(all_gone(names), timeout=settings.timeout_for(objects))
            await asyncio.sleep(_SETTLE)
            while_watching = metrics.attribute(before, await metrics.take_snapshot(api))
        await asyncio.sleep(_SETTLE)
        end = await metrics.take_snapshot(api)
        after_all = metrics.attribute(before, end)
    finally:
        await cluster.discard_namespace(api, variant, namespace, concurrency=settings.concurrency)
    return {
        'objects': objects,
        'harness_requests': sum((end.tally - before.tally).values()),
        'residue_while_watching': while_watching,
        'residue': after_all,
        'residue_total': sum(abs(value) for value in after_all.values()),
    }
