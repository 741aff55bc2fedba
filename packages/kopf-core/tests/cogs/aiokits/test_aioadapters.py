"""
Waiting for and raising the flags that embedding code passes: events and futures, asyncio and threading.

Real threads are used where the flags are meant for threads; no sleeps, only
short bounded waits for the results.
"""
import asyncio
import concurrent.futures
import threading
from typing import Any, List

import pytest

from kopf._cogs.aiokits.aioadapters import raise_flag, wait_flag


async def test_waiting_for_an_asyncio_event_returns_when_set() -> None:
    flag = asyncio.Event()
    task = asyncio.create_task(wait_flag(flag))
    await asyncio.sleep(0)
    assert not task.done()
    flag.set()
    assert await asyncio.wait_for(task, timeout=1) is None


async def test_waiting_for_an_asyncio_future_returns_its_result() -> None:
    flag: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(wait_flag(flag))
    await asyncio.sleep(0)
    assert not task.done()
    flag.set_result('reason')
    assert await asyncio.wait_for(task, timeout=1) == 'reason'


async def test_waiting_for_a_concurrent_future_returns_its_result() -> None:
    flag: concurrent.futures.Future[Any] = concurrent.futures.Future()
    task = asyncio.create_task(wait_flag(flag))
    await asyncio.sleep(0)
    assert not task.done()
    threading.Thread(target=flag.set_result, args=('reason',)).start()
    assert await asyncio.wait_for(task, timeout=1) == 'reason'


async def test_waiting_for_a_threading_event_returns_when_set_from_another_thread() -> None:
    flag = threading.Event()
    task = asyncio.create_task(wait_flag(flag))
    await asyncio.sleep(0)
    assert not task.done()
    threading.Thread(target=flag.set).start()
    assert await asyncio.wait_for(task, timeout=1) is None


async def test_waiting_for_an_already_set_threading_event_returns_at_once() -> None:
    flag = threading.Event()
    flag.set()
    assert await asyncio.wait_for(wait_flag(flag), timeout=1) is None


async def test_waiting_for_no_flag_never_ends() -> None:
    task = asyncio.create_task(wait_flag(None))
    await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_the_wait_does_not_cancel_the_asyncio_future() -> None:
    flag: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(wait_flag(flag))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not flag.cancelled()


async def test_cancelling_the_wait_does_not_cancel_the_concurrent_future() -> None:
    flag: concurrent.futures.Future[Any] = concurrent.futures.Future()
    task = asyncio.create_task(wait_flag(flag))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not flag.cancelled()


async def test_waiting_for_an_unsupported_flag_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Unsupported flag type"):
        await wait_flag(object())  # type: ignore[arg-type]


async def test_raising_an_asyncio_event_sets_it() -> None:
    flag = asyncio.Event()
    raise_flag(flag)
    assert flag.is_set()


async def test_raising_an_asyncio_future_resolves_it_with_the_result() -> None:
    flag: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    raise_flag(flag, 'reason')
    assert await asyncio.wait_for(flag, timeout=1) == 'reason'


async def test_raising_an_already_resolved_asyncio_future_keeps_its_result() -> None:
    flag: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    flag.set_result('first')
    raise_flag(flag, 'second')
    await asyncio.sleep(0)
    assert flag.result() == 'first'


async def test_raising_a_concurrent_future_resolves_it_with_the_result() -> None:
    flag: concurrent.futures.Future[Any] = concurrent.futures.Future()
    raise_flag(flag, 'reason')
    assert flag.result(timeout=0) == 'reason'


async def test_raising_an_already_resolved_concurrent_future_keeps_its_result() -> None:
    flag: concurrent.futures.Future[Any] = concurrent.futures.Future()
    flag.set_result('first')
    raise_flag(flag, 'second')
    assert flag.result(timeout=0) == 'first'


async def test_raising_a_threading_event_sets_it() -> None:
    flag = threading.Event()
    raise_flag(flag)
    assert flag.is_set()


async def test_raising_no_flag_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    scheduled: List[object] = []
    with monkeypatch.context() as patched:  # only around the call: the loop needs its own methods after it
        patched.setattr(loop, 'call_soon_threadsafe', lambda *args: scheduled.append(args))
        patched.setattr(loop, 'call_soon', lambda *args: scheduled.append(args))
        raise_flag(None, 'reason')  # no TypeError, as for the unsupported flags
    assert scheduled == []


async def test_raising_an_unsupported_flag_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Unsupported flag type"):
        raise_flag(object())  # type: ignore[arg-type]
