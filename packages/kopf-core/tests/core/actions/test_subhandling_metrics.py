"""
The sub-handlers' runs in the metrics: counted under their top-level handler's id, never under their own.

The attack: sub-handler ids made of an object's contents (``id=f'item-{item}'``, as the
docs of sub-handlers show) became label values: 20 objects x 100 items made 2,000 series
of each handler metric, kept after the objects were gone, and showed the items' names to
whoever scraped the metrics. Inputs: real parent handlers run by ``execute_handler_once`` in
the scope that the changing handlers get, over many objects; the process's own metrics, read
by handler ids of each test's own. Nothing is mocked.
"""
import logging
from typing import Any, Dict, List

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.configs.progress import SmartProgressStorage
from kopf._cogs.helpers import instruments
from kopf._cogs.structs import bodies, patches, references
from kopf._core.actions import execution, progression, subhandling
from kopf._core.intents.handlers import BaseHandler, ChangingHandler, HandlerId

RESOURCE = references.Resource('kopf.dev', 'v1', 'kopfexamples')
LOGGER = logging.getLogger('kopf.objects')


def item_fn(**_: Any) -> None:
    pass


async def run(handler_id: str, name: str, items: List[str], *, nested: bool = False) -> None:
    """One handling cycle of one object: the parent executes a sub-handler per item (and each one its own)."""
    async def parent_fn(**_: Any) -> None:
        fns = {f'item-{item}': (child_fn if nested else item_fn) for item in items}
        await kopf.execute(fns=fns, lifecycle=kopf.lifecycles.all_at_once)

    async def child_fn(**_: Any) -> None:
        await kopf.execute(fns={f'part-{name}': item_fn}, lifecycle=kopf.lifecycles.all_at_once)

    def build_kwargs(handler: BaseHandler, state: progression.HandlerState) -> Dict[str, Any]:
        return {'resource': RESOURCE}

    body = bodies.Body({'metadata': {'name': name, 'namespace': 'ns'}, 'spec': {'items': items}})
    subscope = subhandling.make_scope(purpose='create', body=body, patch=patches.Patch(),
                                      storage=SmartProgressStorage(), settings=OperatorSettings(),
                                      logger=LOGGER, build_kwargs=build_kwargs)
    context = execution.ExecutionContext(settings=OperatorSettings(), logger=LOGGER, build_kwargs=build_kwargs,
                                         subscope=subscope)
    handler = ChangingHandler(fn=parent_fn, id=HandlerId(handler_id), param=None, errors=None, timeout=None,
                              retries=None, backoff=None)
    state = progression.HandlerState.from_scratch(purpose='create')
    await execution.execute_handler_once(handler=handler, state=state, context=context)


def runs_by_handler(prefix: str) -> Dict[str, float]:
    """The runs of the handlers whose ids start with the prefix, by the handler label, all outcomes together."""
    totals: Dict[str, float] = {}
    for sample in instruments.HANDLER_RUNS.collect().samples:
        handler, _, _ = sample.labels
        if handler.startswith(prefix):
            totals[handler] = totals.get(handler, 0.0) + sample.value
    return totals


def series_count(prefix: str) -> int:
    return sum(1 for family in (instruments.HANDLER_RUNS.collect(), instruments.HANDLER_DURATION.collect())
               for sample in family.samples if sample.labels[0].startswith(prefix))


async def test_many_objects_with_many_items_make_two_handler_labels() -> None:
    for obj in range(20):
        await run('fold-create_fn', f'obj{obj}', [f'secret{obj}x{i}' for i in range(100)])
    assert runs_by_handler('fold-create_fn') == {'fold-create_fn': 20, 'fold-create_fn/*': 2000}
    assert instruments.HANDLER_RUNS.value(('fold-create_fn/*', 'kopfexamples.kopf.dev', 'success')) == 2000
    assert instruments.HANDLER_DURATION.count(('fold-create_fn/*', 'kopfexamples.kopf.dev')) == 2000
    labels = {label for sample in instruments.HANDLER_RUNS.collect().samples for label in sample.labels}
    assert not any('secret' in label for label in labels)  # the objects' contents are not shown


async def test_the_series_do_not_grow_with_the_objects_handled() -> None:
    await run('grow-create_fn', 'first', ['a', 'b'])
    before = series_count('grow-create_fn')
    for obj in range(50):  # objects come and go: their items' ids differ each time
        await run('grow-create_fn', f'obj{obj}', [f'obj{obj}-item{i}' for i in range(10)])
    assert series_count('grow-create_fn') == before == 4  # (parent, children) x (runs, durations)


async def test_nested_sub_handlers_count_under_the_top_level_handler() -> None:
    await run('nest-update_fn/spec.items', 'obj', ['a', 'b', 'c'], nested=True)
    assert runs_by_handler('nest-update_fn') == {'nest-update_fn/spec.items': 1, 'nest-update_fn/spec.items/*': 6}
