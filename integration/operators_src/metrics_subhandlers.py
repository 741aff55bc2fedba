"""
A sub-handler per item of the spec, with the id ``item-{item}``, as the docs of sub-handlers show it.

All the items of an object run in one cycle (``all_at_once``): for the metrics' tests of
the sub-handlers' labels and of a flood of scrapes.
"""
from typing import Any

import kopf

PLURAL = 'subitemsobjs.metrics.kopf.dev'


async def handle_item(**_: Any) -> None:
    pass


@kopf.on.create(PLURAL)
async def create_fn(spec: kopf.Spec, **_: Any) -> None:
    fns = {f'item-{item}': handle_item for item in spec.get('items', [])}
    await kopf.execute(fns=fns, lifecycle=kopf.lifecycles.all_at_once)
