"""
One rendering of the metrics for the scrapes that come together, reused briefly, made in a thread.

Inputs: a rendering function that counts its calls, says its thread, may be slow or fail.
Outputs: what the callers get, how many renderings were made, in which thread. Nothing is mocked.
"""
import asyncio
import threading
import time

import pytest

from kopf._core.engines.endpoints.metricsrendering import SharedRendering


class Render:
    def __init__(self, *, seconds: float = 0, failures: int = 0) -> None:
        self.calls = 0
        self.threads: set[int] = set()
        self.seconds = seconds
        self.failures = failures

    def __call__(self) -> str:
        self.calls += 1
        self.threads.add(threading.get_ident())
        time.sleep(self.seconds)
        if self.calls <= self.failures:
            raise ValueError(f"failure {self.calls}")
        return f"text {self.calls}"


async def test_the_callers_during_a_rendering_share_it() -> None:
    render = Render(seconds=0.2)
    rendering = SharedRendering(render)
    try:
        texts = await asyncio.gather(*[rendering.get() for _ in range(50)])
    finally:
        rendering.close()
    assert texts == ['text 1'] * 50
    assert render.calls == 1


async def test_a_text_is_reused_for_its_max_age_then_renewed() -> None:
    render = Render()
    rendering = SharedRendering(render, max_age=0.2)
    try:
        assert [await rendering.get(), await rendering.get()] == ['text 1', 'text 1']
        await asyncio.sleep(0.25)
        assert await rendering.get() == 'text 2'
    finally:
        rendering.close()


async def test_the_rendering_is_in_a_thread_of_its_own() -> None:
    render = Render()
    rendering = SharedRendering(render, max_age=0)
    try:
        for _ in range(3):
            await rendering.get()
    finally:
        rendering.close()
    assert len(render.threads) == 1
    assert threading.get_ident() not in render.threads


async def test_a_failed_rendering_is_not_reused() -> None:
    render = Render(failures=1)
    rendering = SharedRendering(render)
    try:
        results = await asyncio.gather(rendering.get(), rendering.get(), return_exceptions=True)
        assert [str(result) for result in results] == ['failure 1', 'failure 1']
        assert await rendering.get() == 'text 2'
    finally:
        rendering.close()


async def test_a_caller_gone_does_not_cancel_the_others() -> None:
    rendering = SharedRendering(Render(seconds=0.2))
    try:
        first = asyncio.create_task(rendering.get())
        second = asyncio.create_task(rendering.get())
        await asyncio.sleep(0.05)
        first.cancel()
        assert await second == 'text 1'
        with pytest.raises(asyncio.CancelledError):
            await first
    finally:
        rendering.close()
