"""
SIGINT/SIGTERM reach the operator's loop, also when its wakeup socket is full.

The signals are real (sent to this process); the handlers are restored after each test.
"""
import asyncio
import os
import signal
import threading
import time
from typing import List

from kopf._core.reactor.signalling import SignalCatcher


async def test_a_signal_is_reacted_to_in_the_loop() -> None:
    received: List[signal.Signals] = []
    catcher = SignalCatcher(received.append)
    catcher.install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(0.1)
    finally:
        catcher.remove()
    assert received == [signal.SIGTERM]


async def test_a_signal_is_not_lost_when_the_loop_lags_behind_the_thread_pool() -> None:
    received: List[signal.Signals] = []
    catcher = SignalCatcher(received.append)
    catcher.install()
    loop = asyncio.get_running_loop()

    def finish_many_sync_handlers() -> None:  # each writes a byte into the loop's wakeup socket
        for _ in range(20_000):
            loop.call_soon_threadsafe(lambda: None)

    try:
        thread = threading.Thread(target=finish_many_sync_handlers)
        thread.start()
        thread.join()  # the loop is blocked meanwhile: the socket is full by now
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # noqa: ASYNC251  # the loop still blocked, on purpose: the signal arrives meanwhile
        await asyncio.sleep(0.1)
    finally:
        catcher.remove()
    assert received == [signal.SIGINT]


async def test_removing_restores_the_previous_handlers() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    catcher = SignalCatcher(lambda sig: None)
    catcher.install()
    assert signal.getsignal(signal.SIGINT) is not before[signal.SIGINT]
    catcher.remove()
    assert {sig: signal.getsignal(sig) for sig in before} == before


async def test_a_released_signal_goes_to_its_previous_handler_at_once() -> None:
    received: List[signal.Signals] = []
    previous = signal.getsignal(signal.SIGINT)  # asyncio.run()'s: it interrupts the main task
    catcher = SignalCatcher(received.append)
    catcher.install()
    try:
        catcher.release(signal.SIGINT)  # as after the first Ctrl-C: the second one interrupts
        assert signal.getsignal(signal.SIGINT) is previous
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        catcher.remove()
    assert received == []


def test_nothing_is_installed_outside_of_the_main_thread() -> None:
    before = signal.getsignal(signal.SIGTERM)
    errors: List[BaseException] = []

    def in_a_thread() -> None:
        async def main() -> None:
            SignalCatcher(lambda sig: None).install()
        try:
            asyncio.run(main())
        except BaseException as e:  # signal.signal() would raise ValueError in a thread
            errors.append(e)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert errors == [] and signal.getsignal(signal.SIGTERM) is before
