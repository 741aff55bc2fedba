"""
The operator that ``benchmarks/attacks.py`` attacks: a sub-handler per item of the spec, as the docs show it.

``create_fn`` executes one sub-handler per item of ``spec.items``, with the id
``item-{item}`` (the example of sub-handlers in ``docs/handlers.md``), all of them in
one cycle. ``update_fn`` makes every change of an object handled, so that its
diff-base is read at every change. The resource is the benchmarks' ``benchmarkplains``.
"""
from typing import Any

import kopf

GROUP = 'bench.kopf.dev'
VERSION = 'v1'
PLURAL = 'benchmarkplains'


async def handle_item(**_: Any) -> None:
    pass


@kopf.on.create(GROUP, VERSION, PLURAL)
async def create_fn(spec: kopf.Spec, **_: Any) -> None:
    fns = {f'item-{item}': handle_item for item in spec.get('items', [])}
    await kopf.execute(fns=fns, lifecycle=kopf.lifecycles.all_at_once)


@kopf.on.update(GROUP, VERSION, PLURAL)
def update_fn(**_: Any) -> None:
    pass
