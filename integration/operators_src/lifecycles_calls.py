"""
Handlers that print their calls, to see which run in which cycle under each lifecycle.

Run as ``python lifecycles_calls.py ENTRY LIFECYCLE NAMESPACE``: ENTRY is the embedding
function to start the operator with (``run``, ``operator``, ``spawn_tasks``, or
``default`` for ``kopf.set_default_lifecycle()`` + ``kopf.run()`` without ``lifecycle=``);
LIFECYCLE is a name in ``kopf.lifecycles``, or ``none`` for no lifecycle at all.

Every call prints ``CALL <handler id> <retry> <resourceVersion of the body>``: the
handlers of one cycle see the same resourceVersion; each cycle patches the object.
Handler ``b`` fails once (and can be retried at once). With ``spec.mode: sub``, the
same three functions run as sub-handlers via ``kopf.execute(lifecycle=spec.sub)``.
"""
import asyncio
import sys
from typing import Any, Callable, Dict

import kopf

GROUP = 'lifecycles.kopf.dev'


def calls(name: str) -> Callable[..., None]:
    def fn(retry: int, body: kopf.Body, **_: Any) -> None:
        print(f"CALL {name} {retry} {body.metadata['resourceVersion']}", flush=True)
        if name.endswith('b') and retry == 0:
            raise kopf.TemporaryError("b fails once", delay=0)
    return fn


def mode_is(mode: str) -> Callable[..., bool]:
    return lambda spec, **_: spec.get('mode') == mode


for _name in ['a', 'b', 'c']:
    kopf.on.create(GROUP, 'lifecycleobjs', id=_name, when=mode_is('plain'))(calls(_name))


@kopf.on.create(GROUP, 'lifecycleobjs', id='parent', when=mode_is('sub'))
async def parent_fn(spec: kopf.Spec, **_: Any) -> None:
    fns: Dict[str, Callable[..., Any]] = {name: calls(f'parent/{name}') for name in ['a', 'b', 'c']}
    await kopf.execute(fns=fns, lifecycle=getattr(kopf.lifecycles, spec['sub']))


async def _spawned(**kwargs: Any) -> None:
    tasks = await kopf.spawn_tasks(**kwargs)
    await kopf.run_tasks(tasks)


def main(entry: str, lifecycle_name: str, namespace: str) -> None:
    kopf.configure(verbose=True)
    lifecycle = None if lifecycle_name == 'none' else getattr(kopf.lifecycles, lifecycle_name)
    if entry == 'run':
        kopf.run(lifecycle=lifecycle, namespace=namespace)
    elif entry == 'operator':
        asyncio.run(kopf.operator(lifecycle=lifecycle, namespace=namespace))
    elif entry == 'spawn_tasks':
        asyncio.run(_spawned(lifecycle=lifecycle, namespace=namespace))
    elif entry == 'default':
        if lifecycle is not None:
            kopf.set_default_lifecycle(lifecycle)
        kopf.run(namespace=namespace)
    else:
        raise SystemExit(f"Unknown entry: {entry}")


if __name__ == '__main__':
    main(*sys.argv[1:])
