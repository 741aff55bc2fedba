"""
Faults of a resource's watch-stream, survived: watches cut at connecting, beyond the client's retries.

Inputs: ``operators_src/api_outages.py`` in its own process (the client's
retries made short), talking to the API server through the chaos proxy, which
here cuts the open watch of the served resource and then every new watch of it
at connecting, so that the client's transport error (a server disconnect,
neither an API error nor an OSError) outlasts its retries.
Outputs: the operator's log and process (it keeps running, the stream
reconnects by itself), and an object created afterwards, as stored (handled).
"""
import asyncio
import pathlib
import ssl
import threading
from collections.abc import Callable, Iterator

import pytest
from aiohttp import web

from integration import kubeobjects
from integration.chaos import _proxy, _schedule
from integration.chaos._harness import _write_kubeconfig
from integration.controlplane import Cluster
from integration.operating import OperatorProcess
from integration.test_observation_faults import GROUP, OPERATOR, STABLE, create, wait_handled

WATCH_ERRORS = [r"Failed to stream stables\.v1\.outage\.kopf\.dev", r"Request attempt #\d+/\d+ failed"]


class WatchCutter(_proxy.FaultProxy):
    """Passes everything through, except that new watches of the resource are cut while ``cutting``."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.cutting = threading.Event()
        self.cuts = 0

    def cut_open_watches(self) -> None:
        """End the open watches of the resource as if the connection broke (the stream must reconnect)."""
        for watch in self._watches:
            if f'/{GROUP}/' in watch.path and watch.pump is not None:
                watch.ending = _schedule.DROP_WATCH
                watch.pump.cancel()

    async def stop(self) -> None:
        for watch in self._watches:  # the open streams' handlers would hold the shutdown for a minute
            if watch.pump is not None:
                watch.pump.cancel()
        await super().stop()

    async def _serve_watch(self, request: web.Request) -> web.StreamResponse:
        if self.cutting.is_set() and f'/{GROUP}/' in request.path:
            self.cuts += 1
            _proxy._abort(request)
            return web.Response(status=502)
        return await super()._serve_watch(request)


@pytest.fixture
def proxy(cluster: Cluster, tmp_path: pathlib.Path) -> Iterator[tuple[WatchCutter, asyncio.AbstractEventLoop]]:
    cp = cluster.control_plane
    assert cp is not None, "the proxy needs the local control plane"
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    cutter = WatchCutter(cp.server, ssl.create_default_context(cafile=str(cp.ca_path)), tmp_path / 'faults.jsonl')
    asyncio.run_coroutine_threadsafe(cutter.start(), loop).result(timeout=30)
    try:
        yield cutter, loop
    finally:
        asyncio.run_coroutine_threadsafe(cutter.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        if not thread.is_alive():
            loop.close()


def test_watch_cut_at_connecting_beyond_the_retries_reconnects(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path,
        proxy: tuple[WatchCutter, asyncio.AbstractEventLoop],
        operator_process: Callable[..., OperatorProcess]) -> None:
    cutter, loop = proxy
    kubeobjects.apply_crds(cluster, STABLE)
    kubeconfig = _write_kubeconfig(tmp_path / 'kubeconfig', cutter.url, cluster.admin_token)
    operator = operator_process(OPERATOR, '--standalone', '--verbose', env={'KUBECONFIG': str(kubeconfig)},
                                expected_errors=WATCH_ERRORS)
    operator.wait_for(r"Starting the watch-stream for stables\.v1\.outage\.kopf\.dev", timeout=90)
    create(cluster, namespace, 'Stable', 'before-cuts')
    wait_handled(cluster, namespace, 'before-cuts')
    cutter.cutting.set()
    loop.call_soon_threadsafe(cutter.cut_open_watches)  # the stream reconnects, and is cut at connecting
    operator.wait_for(r"Failed to stream stables\.v1\.outage\.kopf\.dev", count=3, timeout=120)
    cutter.cutting.clear()
    operator.wait_for(r"Succeeded to stream stables\.v1\.outage\.kopf\.dev .* after \d+ failure\(s\)\.",
                      timeout=90)
    create(cluster, namespace, 'Stable', 'after-cuts')
    wait_handled(cluster, namespace, 'after-cuts')
    assert operator.process is not None and operator.process.poll() is None, operator.log
    assert "has failed" not in operator.log, operator.log
    assert operator.log.count("Starting the watch-stream for stables.v1.outage.kopf.dev") == 1, operator.log
