"""
Sub-handlers: one handler per item of a list, each with its own progress.

A handler can declare sub-handlers while it runs (``@kopf.subhandler``, or
``kopf.register(fn, id=...)``): the framework runs them after it, tracks each
one's retries and outcome separately in the object (``create_fn/item-a``, ...),
and the parent handler succeeds only when all of them have succeeded. A failed
sub-handler is retried alone; the finished ones are not run again.
"""
import functools
from typing import Any

import kopf


def handle_item(item: str, retry: int, logger: kopf.ObjectLogger, **_: Any) -> None:
    if item.startswith('slow') and retry == 0:
        raise kopf.TemporaryError(f"The item {item!r} is not ready yet.", delay=0.5)
    logger.info(f"Handled the item {item!r}.")


@kopf.on.create('kopfexamples')
def create_fn(spec: kopf.Spec, **_: Any) -> None:
    for item in spec.get('items', []):
        @kopf.subhandler(id=f'item-{item}')
        def handle(retry: int, logger: kopf.ObjectLogger, item: str = item, **_: Any) -> None:
            handle_item(item, retry, logger)


@kopf.on.update('kopfexamples', field='spec.items')
def update_fn(old: Any, new: Any, **_: Any) -> None:
    for item in sorted(set(new or []) - set(old or [])):  # only the new ones
        kopf.register(functools.partial(handle_item, item), id=f'item-{item}')
