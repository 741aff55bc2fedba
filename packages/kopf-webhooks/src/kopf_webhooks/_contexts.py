"""
Explicit cleanup for webhook servers & tunnels.

A server is an async generator: its listening sockets, temporary files and
tunnels are released in its ``finally:`` when it is closed. But a generator
abandoned mid-way is closed only when garbage-collected, which can happen late
or never. So the servers are also async context managers: when the context is
exited, all the generators they produced are closed explicitly, as if they
were garbage-collected. Plain usage without the context manager still works.
"""
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, AsyncGenerator, List, Optional, Type, TypeVar

if TYPE_CHECKING:
    from kopf import WebhookClientConfig, WebhookFn

_SelfT = TypeVar('_SelfT', bound='WebhookContextManager')


class WebhookContextManager:
    """
    A base for servers & tunnels that close their generators on the context's exit.

    Descendants implement ``_serve(fn)`` as an async generator; ``__call__``
    starts and remembers it. Descendants may also override ``__call__`` itself
    (e.g. to wrap ``super().__call__(fn)``), as the manual suggests.
    """

    def __init__(self) -> None:
        super().__init__()
        # Strong references: an abandoned generator must wait for the exit, not for the garbage collector.
        # A server is used once per operator, so they do not accumulate.
        self._generators: List[AsyncGenerator[WebhookClientConfig, None]] = []

    async def __aenter__(self: _SelfT) -> _SelfT:
        return self

    async def __aexit__(
            self,
            exc_type: Optional[Type[BaseException]],
            exc_val: Optional[BaseException],
            exc_tb: Optional[TracebackType],
    ) -> None:
        for generator in list(self._generators):
            try:
                await generator.aclose()
            except RuntimeError:
                # Still running in another task: that task will close it when cancelled.
                pass
        self._generators.clear()

    def __call__(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        generator = self._serve(fn)
        self._generators.append(generator)
        return generator

    def _serve(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        raise NotImplementedError
