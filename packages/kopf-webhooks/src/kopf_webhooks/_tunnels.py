"""
Tunnels: admission requests from remote clusters to a locally running operator.

A remote cluster cannot reach the developer's machine directly. A tunnel
runs a local endpoint (a regular :class:`WebhookServer`) and exposes it via
an external service under a public HTTPS URL, which goes into the webhook
configurations instead of the local one::

    settings.admission.server = kopf.WebhookNgrokTunnel(path='/xyz123')

Tunnelling services are a dependency and a risk that developers must choose
explicitly; nothing here tunnels unless asked to.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import urllib.parse
from typing import TYPE_CHECKING, Any, AsyncGenerator, Optional, Tuple

from kopf_webhooks import _clusters, _contexts, _errors, _servers
from kopf_webhooks._servers import StrPath

if TYPE_CHECKING:
    from kopf import WebhookClientConfig, WebhookFn

logger = logging.getLogger('kopf.webhooks')

# Where the tunnel's local server listens unless told otherwise: only the local ngrok agent connects to it.
LOCAL_ADDR = '127.0.0.1'


class WebhookNgrokTunnel(_contexts.WebhookContextManager):
    """
    Tunnel the admission requests via ngrok (with the ``pyngrok`` library).

    ``addr``, ``port``, ``path`` mean the same as in :class:`WebhookServer`:
    where to listen locally; but only ``127.0.0.1`` by default, as only the
    local ngrok agent connects to it. The local server is insecure (HTTP): ngrok
    terminates HTTPS with its own certificates, which the default trust chain
    accepts, so no CA is reported in the client configs.

    ``token`` is the ngrok auth token (paid plans lift the request limits),
    ``region`` is ngrok's region, ``binary`` is the path to the ``ngrok``
    binary (otherwise, pyngrok downloads it at runtime).

    The ``pyngrok`` library is needed when the tunnel starts, not before:
    an operator can construct several servers & tunnels and use one of them.

    The public URL is not protected: anyone who knows it can send requests to
    the operator. Ngrok's random hostnames and a random ``path`` make it hard
    to guess, which is enough only for short development runs.
    """

    addr: Optional[str]
    port: Optional[int]
    path: Optional[str]
    token: Optional[str]
    region: Optional[str]
    binary: Optional[StrPath]

    def __init__(
            self,
            *,
            addr: Optional[str] = None,
            port: Optional[int] = None,
            path: Optional[str] = None,
            token: Optional[str] = None,
            region: Optional[str] = None,
            binary: Optional[StrPath] = None,
    ) -> None:
        super().__init__()
        self.addr = addr
        self.port = port
        self.path = path
        self.token = token
        self.region = region
        self.binary = binary

    async def _serve(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        conf, ngrok, exception = _import_pyngrok()  # when the tunnel starts, before anything listens
        binary = str(self.binary) if self.binary is not None else None
        options = {'auth_token': self.token, 'region': self.region, 'ngrok_path': binary}
        pyngrok_config = conf.PyngrokConfig(**{key: val for key, val in options.items() if val is not None})

        # The blocking calls to the ngrok process go to threads, not to stall the operator.
        # Only the local ngrok agent connects to the local server: no need to listen beyond the loopback.
        loop = asyncio.get_running_loop()
        addr = self.addr if self.addr is not None else LOCAL_ADDR
        server = _servers.WebhookServer(addr=addr, port=self.port, path=self.path, insecure=True)
        public_url: Optional[str] = None
        try:
            async with server, contextlib.aclosing(server(fn)) as local_configs:
                async for local_config in local_configs:
                    local = urllib.parse.urlsplit(local_config.get('url') or '')
                    if public_url is not None:
                        await loop.run_in_executor(None, functools.partial(
                            ngrok.disconnect, public_url, pyngrok_config=pyngrok_config))
                        public_url = None
                    try:
                        tunnel = await loop.run_in_executor(None, functools.partial(
                            ngrok.connect, local.netloc, bind_tls=True, pyngrok_config=pyngrok_config))
                    except exception.PyngrokError as e:
                        raise _errors.MissingDependencyError(
                            f"The ngrok tunnel cannot be established: {e} "
                            f"Give the path to an ngrok binary as WebhookNgrokTunnel(binary=...), "
                            f"or let pyngrok find or download one (its own configuration; "
                            f"the download needs internet access)."
                        ) from e
                    public_url = str(tunnel.public_url)

                    # Kubernetes needs HTTPS; ngrok terminates it even if it reports an http:// URL.
                    public = urllib.parse.urlsplit(public_url)
                    url = urllib.parse.urlunsplit(('https', public.netloc, local.path, '', ''))
                    logger.debug(f"Tunnelling the webhooks from {url} to {local_config.get('url')}")
                    yield {'url': url}
        finally:
            # Synchronously: the cleanup must happen even when the task is being cancelled.
            if public_url is not None:
                ngrok.disconnect(public_url, pyngrok_config=pyngrok_config)


class WebhookAutoTunnel(_clusters.ClusterDetector, _contexts.WebhookContextManager):
    """
    The same as :class:`WebhookAutoServer`, but tunnels if no local cluster is detected.

    If the cluster is K3d or Minikube, a local server with their magic hostname
    is used. Otherwise, the requests are tunnelled from wherever the cluster is
    (currently, via ngrok only). Since tunnels expose the operator to the outer
    world, this must be the developers' explicit choice; if tunnelling is not
    wanted or not possible, use :class:`WebhookAutoServer`.

    Only the options common to all servers & tunnels are accepted: where to
    listen locally (``addr:port/path``).
    """

    addr: Optional[str]
    port: Optional[int]
    path: Optional[str]

    def __init__(
            self,
            *,
            addr: Optional[str] = None,
            port: Optional[int] = None,
            path: Optional[str] = None,
    ) -> None:
        super().__init__()
        self.addr = addr
        self.port = port
        self.path = path

    async def _serve(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        host = self.guess_host()
        server: _contexts.WebhookContextManager
        if host is not None:
            server = _servers.WebhookServer(addr=self.addr, port=self.port, path=self.path, host=host)
        else:
            server = WebhookNgrokTunnel(addr=self.addr, port=self.port, path=self.path)
        async with server, contextlib.aclosing(server(fn)) as client_configs:
            async for client_config in client_configs:
                yield client_config


def _import_pyngrok() -> Tuple[Any, Any, Any]:
    """The ``pyngrok.conf``, ``.ngrok``, ``.exception`` modules, or an explanation of how to get them."""
    try:
        from pyngrok import conf, exception, ngrok
    except ImportError as e:
        raise _errors.MissingDependencyError(
            "Ngrok tunnels need the 'pyngrok' library. "
            "Install it with: pip install kopf-webhooks[ngrok]. "
            "Alternatively, use a local server, e.g. kopf.WebhookAutoServer()."
        ) from e
    return conf, ngrok, exception
