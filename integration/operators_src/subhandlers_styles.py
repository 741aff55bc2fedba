"""
Sub-handlers on ``subobjs.subhandlers.kopf.dev``, in both styles, one parent per style.

Each child returns its item, so ``status.<parent>/<child>`` shows that it ran.
The item named ``slow`` fails once (temporarily), so that its parent is not
finished in the first cycle and is invoked again to register its children.
"""
import functools
from typing import Any

import kopf

GROUP = 'subhandlers.kopf.dev'
PLURAL = 'subobjs'


def handle_item(item: str, *, retry: int, style: str, **_: Any) -> dict[str, str]:
    if item == 'slow' and not retry:
        raise kopf.TemporaryError("Not yet.", delay=1)
    return {'item': item, 'style': style}


@kopf.on.create(GROUP, PLURAL)
def decorated(spec: kopf.Spec, **_: Any) -> None:
    for item in spec.get('items', []):
        @kopf.subhandler(id=item)
        def handle(item: str = item, **kwargs: Any) -> dict[str, str]:
            return handle_item(item, style='decorated', **kwargs)


@kopf.on.create(GROUP, PLURAL)
async def executed(spec: kopf.Spec, **_: Any) -> str:
    fns = {item: functools.partial(handle_item, item=item, style='executed') for item in spec.get('items', [])}
    await kopf.execute(fns=fns)
    return 'all items are handled'


def first_step(**_: Any) -> str:
    return 'first'


def second_step(**_: Any) -> str:
    return 'second'


@kopf.on.create(GROUP, PLURAL)
async def listed(**_: Any) -> None:
    # Functions without explicit ids: named after themselves.
    await kopf.execute(fns=[first_step, second_step])
