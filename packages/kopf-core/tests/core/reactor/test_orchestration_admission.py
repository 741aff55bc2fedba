"""
Which streams may start cycles: only while operating, entitled by the Leases, and of the slots served now.
"""
import asyncio

from kopf._core.engines.coordination import sharding
from kopf._core.reactor import inventory, orchestration
from kopf._core.reactor import sharding as reactor_sharding


def test_operating_and_entitled_are_both_needed() -> None:
    operating = asyncio.Event()
    entitled = True
    admitted = orchestration._admission(operating, None, None, lambda: entitled)
    assert not admitted()  # paused
    operating.set()
    assert admitted()
    entitled = False  # e.g. the Lease is not renewed within the renew deadline
    assert not admitted()
    assert orchestration._admission(operating, None, None, None)()  # no Leases: operating decides alone


async def test_a_stream_of_an_older_shard_selector_is_not_admitted() -> None:
    operating = asyncio.Event()
    operating.set()
    serving = reactor_sharding.ShardServing(field='uid', changed=asyncio.Event(), memories=inventory.ObjectMemories(),
                                            context_of=lambda memory: None)  # type: ignore[arg-type,return-value]
    applying = asyncio.create_task(serving.apply(frozenset({1, 2, 3})))
    await asyncio.sleep(0)
    older = orchestration._admission(operating, serving, serving.selector, None)
    assert older()
    await serving.mark_applied(serving.version)
    await applying
    applying = asyncio.create_task(serving.apply(frozenset({1, 2})))  # slot 3 is given away
    await asyncio.sleep(0)
    newer = orchestration._admission(operating, serving, sharding.selector({1, 2}, field='uid'), None)
    assert not older() and newer()
    await serving.mark_applied(serving.version)
    await applying
