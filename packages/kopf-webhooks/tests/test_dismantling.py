"""Large reviews freed in slices: everything nobody else holds, nothing that someone keeps."""
import asyncio
import sys
import weakref
from typing import Any, List

import pytest

from kopf_webhooks import _dismantling


class Leaf:
    """A member that can be watched dying (floats and strings cannot be weakly referenced)."""


def document_of(leaves: List[Leaf]) -> dict[str, Any]:
    return {'request': {'object': {'spec': {'samples': list(leaves), 'nested': [[leaf] for leaf in leaves[:10]]}}}}


async def test_a_document_nobody_holds_is_emptied_in_slices() -> None:
    leaves = [Leaf() for _ in range(10_000)]
    refs = [weakref.ref(leaf) for leaf in leaves]
    document = document_of(leaves)
    del leaves
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    task = asyncio.create_task(_dismantling.dismantle(document, slice_duration=0))
    del document
    await task
    ticker.cancel()
    assert all(ref() is None for ref in refs)
    assert ticks >= 10_000 // 1024  # the loop ran between the slices


async def test_the_parts_someone_keeps_are_left_intact() -> None:
    leaves = [Leaf() for _ in range(3_000)]
    document = document_of(leaves)
    unkept = Leaf()
    unkept_ref = weakref.ref(unkept)
    document['request']['uid'] = [unkept]
    del unkept
    kept_spec = document['request']['object']['spec']
    kept_object = dict(document['request']['object'])  # as the framework's body is: a copy of the top level
    task = asyncio.create_task(_dismantling.dismantle(document, slice_duration=0))
    del document
    await task
    assert unkept_ref() is None
    assert kept_spec['samples'] == leaves
    assert kept_object['spec'] is kept_spec
    assert len(kept_spec['nested']) == 10


async def test_a_document_its_caller_still_holds_is_left_intact() -> None:
    leaves = [Leaf() for _ in range(3_000)]
    document = document_of(leaves)
    await _dismantling.dismantle(document, slice_duration=0)
    assert document == document_of(leaves)


@pytest.mark.parametrize('document', [None, 'text', 123, {}, []], ids=['none', 'str', 'int', 'dict', 'list'])
def test_scalars_and_empty_documents_are_no_work(document: Any) -> None:
    steps = _dismantling.dismantle(document, slice_duration=0)
    with pytest.raises(StopIteration):  # done at the first step: it never waits for the loop
        steps.send(None)


def test_free_threaded_builds_empty_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, '_is_gil_enabled', lambda: False, raising=False)
    assert not _dismantling._refcounts_are_exact()
    monkeypatch.setattr(sys, '_is_gil_enabled', lambda: True, raising=False)
    assert _dismantling._refcounts_are_exact()


async def test_the_dismantler_keeps_its_tasks_until_done() -> None:
    dismantler = _dismantling.Dismantler()
    dismantler.dismantle_later({'a': [1, 2, 3]})
    assert len(dismantler._tasks) == 1
    await asyncio.gather(*dismantler._tasks)
    await asyncio.sleep(0)
    assert not dismantler._tasks


async def test_the_dismantler_takes_turns_with_the_lock_holder() -> None:
    lock = asyncio.Lock()
    dismantler = _dismantling.Dismantler(lock)
    leaf = Leaf()
    ref = weakref.ref(leaf)
    async with lock:  # e.g. the parser of a large body
        dismantler.dismantle_later({'items': [leaf, 1, 2]})
        del leaf
        for _ in range(10):
            await asyncio.sleep(0)
        assert ref() is not None  # waiting for its turn
    await asyncio.gather(*dismantler._tasks)
    assert ref() is None
