"""
Transformation functions (``patch.fns``) racing with another writer on ``patchobjs.subhandlers.kopf.dev``.

The handlers wait until the test has changed the object (the test then creates
a "gate" file named after the object in ``$TEST_GATE_DIR``), and only then add
their finalizer and list item --- computed for the body they have seen, which
is outdated by then.
"""
import asyncio
import logging
import os
import pathlib
from typing import Any

import kopf

GROUP = 'subhandlers.kopf.dev'
PLURAL = 'patchobjs'
FINALIZER = 'patches.kopf.dev/mine'
GATES = pathlib.Path(os.environ['TEST_GATE_DIR'])

logger = logging.getLogger('patches')
_raced: set[str] = set()


def add_finalizer(body: kopf.RawBody, /) -> None:
    finalizers = body.setdefault('metadata', {}).setdefault('finalizers', [])
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)


def add_item(body: kopf.RawBody, /) -> None:
    items = body.setdefault('spec', {}).setdefault('items', [])
    if 'mine' not in items:
        items.append('mine')


async def wait_for_the_gate(name: str) -> None:
    gate = GATES / name
    for _ in range(600):
        if gate.exists():
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"No gate {gate} in 30 seconds.")


@kopf.on.event(GROUP, PLURAL, labels={'race': 'event'})
async def race_in_event(body: kopf.Body, name: str, patch: kopf.Patch, **_: Any) -> None:
    # Only once per object: the retry of the functions on the next cycle is the framework's job.
    if name in _raced:
        return
    _raced.add(name)
    logger.info(f"Racing for {name} at resourceVersion {body.metadata['resourceVersion']}.")
    await wait_for_the_gate(name)
    patch.fns.append(add_finalizer)
    patch.fns.append(add_item)


@kopf.on.create(GROUP, PLURAL, labels={'race': 'create'})
async def race_in_create(body: kopf.Body, name: str, patch: kopf.Patch, **_: Any) -> str:
    logger.info(f"Racing for {name} at resourceVersion {body.metadata['resourceVersion']}.")
    await wait_for_the_gate(name)
    patch.fns.append(add_finalizer)
    patch.fns.append(add_item)
    return 'created'
