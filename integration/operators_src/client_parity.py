"""
An operator for the client's parity with Kopf 1.45.2, switched by ``PARITY_CLIENT_MODE``:

* ``session``: logs in with its own aiohttp session (``kopf.AiohttpSession``), which
  sends a marker header and counts its requests with a trace config; the handler
  stores the counts in the status, so that the test sees what went through it.
* ``kubeconfig``: logs in with the built-in kubeconfig login only (no libraries).
* ``fast-retries``: the default logins, with the networking back-offs made short
  (as many as by default), so that giving up on an unreachable server is quick.
"""
import os
import ssl
from typing import Any, Optional

import aiohttp

import kopf

MODE = os.environ.get('PARITY_CLIENT_MODE', '')
MARKER = 'X-Kopf-Parity'
SEEN = {'requests': 0, 'marked': 0}


async def count_request(_: aiohttp.ClientSession, __: Any, params: aiohttp.TraceRequestStartParams) -> None:
    SEEN['requests'] += 1
    SEEN['marked'] += int(params.headers.get(MARKER) == 'marker')


if MODE == 'session':
    @kopf.on.login()
    async def login_with_own_session(**kwargs: Any) -> kopf.AiohttpSession:
        info = kopf.login_with_kubeconfig(**kwargs)
        assert info is not None and info.token is not None
        context = ssl.create_default_context(cafile=info.ca_path,
                                             cadata=info.ca_data.decode() if info.ca_data else None)
        tracing = aiohttp.TraceConfig()
        tracing.on_request_start.append(count_request)
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context),
            headers={MARKER: 'marker', 'Authorization': f'Bearer {info.token}'},
            trace_configs=[tracing],
        )
        return kopf.AiohttpSession(aiohttp_session=session, server=info.server)

elif MODE == 'kubeconfig':
    @kopf.on.login()
    def login_with_kubeconfig_only(**kwargs: Any) -> Optional[kopf.ConnectionInfo]:
        return kopf.login_with_kubeconfig(**kwargs)

elif MODE == 'fast-retries':
    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.networking.error_backoffs = [0.1] * 8


@kopf.on.create('kopfexamples')
def create_fn(**_: Any) -> dict[str, int]:
    return dict(SEEN)
