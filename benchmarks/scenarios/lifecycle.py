"""The requests one object costs, from its creation to its deletion, with the operator idle before and after."""
from benchmarks import metrics
from benchmarks.cluster import object_body
from benchmarks.scenarios.session import Figures, Session
from benchmarks.tracker import all_created, all_gone, all_updated

LIFECYCLE_INDEX = 99_999  # a name that no burst ever uses


async def lifecycle(session: Session) -> Figures:
    api, variant, namespace = session.api, session.variant, session.namespace
    body = object_body(variant, LIFECYCLE_INDEX, field='initial')
    name = str(body['metadata']['name'])  # type: ignore[index]
    before = await metrics.take_snapshot(api)
    create = await session.phase(lambda: api.create(variant.plural, namespace, body), all_created([name]), objects=1)
    update = await session.phase(lambda: api.patch(variant.plural, namespace, name, {'spec': {'field': 'updated'}}),
                                 all_updated([name], 'updated'), objects=1)
    delete = await session.phase(lambda: api.delete(variant.plural, namespace, name), all_gone([name]), objects=1)
    requests = metrics.attribute(before, await metrics.take_snapshot(api))
    return {
        'requests': requests,
        'requests_total': metrics.total(requests, watches=False),
        'events': metrics.events_posted(requests),
        'create_wall_s': create['wall_s'],
        'update_wall_s': update['wall_s'],
        'delete_wall_s': delete['wall_s'],
    }
