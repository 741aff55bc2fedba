"""
A local HTTPS (or HTTP) endpoint for admission webhooks.

Usage::

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.admission.server = kopf.WebhookServer(addr='0.0.0.0', port=8443, host='my.host')

The server listens while iterated and yields the client config for the
webhook configurations once it is listening; closing or cancelling the
iteration stops it. Tunnels use it as their local endpoint.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import logging
import os
import pathlib
import socket
import ssl
import tempfile
from typing import TYPE_CHECKING, AsyncGenerator, Collection, Iterator, List, Optional, Tuple

import aiohttp.web

from kopf_webhooks import _certs, _contexts, _requests

if TYPE_CHECKING:
    from kopf import WebhookClientConfig, WebhookFn

logger = logging.getLogger('kopf.webhooks')

# How long a stopping server lets the reviews in progress finish: as long as the API server waits
# for a review by default (10 s), not aiohttp's 60 s, which is longer than the 30 s that Kubernetes
# gives a pod to stop. (The API server keeps its connections open and may go on sending reviews.)
SHUTDOWN_TIMEOUT = 10.0


class WebhookServer(_contexts.WebhookContextManager):
    """
    A local HTTP/HTTPS endpoint, currently based on aiohttp.

    ``addr:port`` is where to listen: all interfaces and a free port by default.
    ``path`` is the root path of the webhooks. ``host`` overrides the hostname
    in the webhook URLs; by default, it is ``addr`` (or ``localhost``).

    Kubernetes accepts only HTTPS, so that is the default. ``certfile`` &
    ``pkeyfile`` (with an optional ``password``) are the server's certificate;
    without them, one is generated for the host, ``addr``, ``localhost``,
    ``127.0.0.1`` and ``extra_sans``, signed by a generated CA (the key is
    encrypted with the ``password`` if given). ``context`` replaces
    all of that with a ready SSL context.

    ``cadata``/``cafile`` is the CA bundle for the clients (the apiservers) to
    verify this server, not used by the server itself; by default, it is the
    generated CA, or none at all for the provided certificates (the
    default trust chain is assumed then). ``cadump`` is a path to save that
    CA bundle to, e.g. for ``curl --cacert``.

    ``verify_mode``, ``verify_cafile``, ``verify_capath``, ``verify_cadata`` go
    into the SSL context to verify the clients' certificates if the clients
    present them (``ssl.CERT_OPTIONAL`` when any CA is given); the verified
    certificates reach the handlers as ``sslpeer``.

    ``insecure=True`` serves plain HTTP: Kubernetes will not use it, but it is
    fine for ``curl`` or as a local endpoint of an HTTPS tunnel.
    """

    DEFAULT_HOST: Optional[str] = None  # the hostname for the URLs & certificates, if not ``host``

    addr: Optional[str]
    port: Optional[int]
    path: Optional[str]
    host: Optional[str]
    cadata: Optional[bytes]
    cafile: Optional[os.PathLike[str] | str]
    cadump: Optional[os.PathLike[str] | str]
    context: Optional[ssl.SSLContext]
    insecure: bool
    certfile: Optional[os.PathLike[str] | str]
    pkeyfile: Optional[os.PathLike[str] | str]
    password: Optional[str]
    extra_sans: Collection[str]
    verify_mode: Optional[ssl.VerifyMode]
    verify_cafile: Optional[os.PathLike[str] | str]
    verify_capath: Optional[os.PathLike[str] | str]
    verify_cadata: Optional[str | bytes]

    def __init__(
            self,
            *,
            # Listening socket, root URL path, and the reported URL hostname:
            addr: Optional[str] = None,
            port: Optional[int] = None,
            path: Optional[str] = None,
            host: Optional[str] = None,
            # The CA bundle to be passed to "client configs":
            cadata: Optional[bytes] = None,
            cafile: Optional[os.PathLike[str] | str] = None,
            cadump: Optional[os.PathLike[str] | str] = None,
            # A pre-configured SSL context (if any):
            context: Optional[ssl.SSLContext] = None,
            # The server's own certificate, or lack of it (loaded into the context):
            insecure: bool = False,
            certfile: Optional[os.PathLike[str] | str] = None,
            pkeyfile: Optional[os.PathLike[str] | str] = None,
            password: Optional[str] = None,
            # Generated certificate's extra info.
            extra_sans: Collection[str] = (),
            # Verification of client certificates (loaded into the context):
            verify_mode: Optional[ssl.VerifyMode] = None,
            verify_cafile: Optional[os.PathLike[str] | str] = None,
            verify_capath: Optional[os.PathLike[str] | str] = None,
            verify_cadata: Optional[str | bytes] = None,
    ) -> None:
        super().__init__()
        if insecure and context is not None:
            raise ValueError("The insecure mode cannot have an SSL context.")
        if (certfile is None) != (pkeyfile is None):
            raise ValueError("Both certfile= and pkeyfile= must be given, or neither.")
        self.addr = addr
        self.port = port
        self.path = path
        self.host = host
        self.cadata = cadata
        self.cafile = cafile
        self.cadump = cadump
        self.context = context
        self.insecure = insecure
        self.certfile = certfile
        self.pkeyfile = pkeyfile
        self.password = password
        self.extra_sans = extra_sans
        self.verify_mode = verify_mode
        self.verify_cafile = verify_cafile
        self.verify_capath = verify_capath
        self.verify_cadata = verify_cadata

    build_certificate = staticmethod(_certs.build_certificate)

    async def _serve(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        hostname = self._get_hostname()
        cadata, context = self._build_ssl(hostname)
        stripped_path = (self.path or '').strip('/')
        root = f'/{stripped_path}' if stripped_path else ''

        app = aiohttp.web.Application(client_max_size=_requests.MAX_REVIEW_SIZE)
        handler = _requests.build_handler(fn)
        app.router.add_post(f'{root}/{{webhook:.*}}', handler)
        if root:
            app.router.add_post(root, handler)
        runner = aiohttp.web.AppRunner(app, handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT)
        await runner.setup()
        try:
            site = aiohttp.web.TCPSite(runner, self.addr, self.port or _get_free_port(self.addr), ssl_context=context)
            await site.start()
            port = _get_listening_port(runner)
            schema = 'http' if context is None else 'https'
            url = f"{schema}://{_format_host(hostname)}:{port}{root}"
            logger.debug(f"Listening for webhooks at {schema}://{_format_host(self.addr or '*')}:{port}{root}")
            logger.debug(f"Accessing the webhooks at {url}")

            client_config: WebhookClientConfig = {'url': url}
            if cadata is not None:
                client_config['caBundle'] = base64.b64encode(cadata).decode('ascii')
            yield client_config

            # Serve until the consumer closes or cancels the iteration.
            await _sleep_forever()
        finally:
            await runner.cleanup()

    def _get_hostname(self) -> str:
        """The hostname to put into the URLs: the explicit one, the class's default, or the listened one."""
        return self.host or self.DEFAULT_HOST or _get_accessible_addr(self.addr)

    def _build_ssl(self, hostname: str) -> Tuple[Optional[bytes], Optional[ssl.SSLContext]]:
        """The CA bundle for the clients (if any) and the server's SSL context (none if insecure)."""
        if self.insecure:
            return self._get_cadata(None), None

        generated: Optional[bytes] = None
        context = self.context
        if context is None:
            # Not create_default_context(): it trusts the system CAs for the clients' certificates,
            # so any publicly issued certificate would reach the handlers as a verified sslpeer.
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            if self.certfile is not None and self.pkeyfile is not None:
                context.load_cert_chain(self.certfile, self.pkeyfile, self.password)
            else:
                generated, pkey = self.build_certificate(self._get_sans(hostname), self.password)
                with _temporary_files(generated, pkey) as (certpath, pkeypath):
                    context.load_cert_chain(certpath, pkeypath, self.password)

        if self.verify_cafile is not None or self.verify_capath is not None or self.verify_cadata is not None:
            context.load_verify_locations(
                cafile=self.verify_cafile,
                capath=self.verify_capath,
                cadata=self.verify_cadata,
            )
            if self.verify_mode is None:
                context.verify_mode = ssl.CERT_OPTIONAL  # verify the clients' certs if they present them
        if self.verify_mode is not None:
            context.verify_mode = self.verify_mode

        return self._get_cadata(generated), context

    def _get_sans(self, hostname: str) -> List[str]:
        # The reported hostname goes first, to become the certificate's common name.
        candidates = [hostname, self.addr, *self.extra_sans, 'localhost', '127.0.0.1']
        return [candidate for candidate in candidates if candidate]

    def _get_cadata(self, generated: Optional[bytes]) -> Optional[bytes]:
        """The CA bundle to report to the clients, also dumped to a file if requested."""
        cadata: Optional[bytes] = self.cadata
        if cadata is None and self.cafile is not None:
            cadata = pathlib.Path(self.cafile).read_bytes()
        if cadata is None:
            cadata = _certs.get_ca(generated) if generated is not None else None
        if cadata is not None and self.cadump is not None:
            pathlib.Path(self.cadump).write_bytes(cadata)
        return cadata


def _get_accessible_addr(addr: Optional[str]) -> str:
    """An address to connect to: the listened one, or localhost if listening on all interfaces."""
    if not addr:
        return 'localhost'
    try:
        if ipaddress.ip_address(addr).is_unspecified:
            return 'localhost'
    except ValueError:
        pass
    return addr


def _format_host(host: str) -> str:
    """Put IPv6 addresses into brackets, as URLs require."""
    try:
        return f'[{host}]' if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def _get_free_port(addr: Optional[str]) -> int:
    """
    A port for the server to listen on, when none is requested.

    With a specific address, port 0 lets the OS pick a free one atomically.
    Without an address, the server listens on all interfaces of all address
    families (IPv4 & IPv6), and port 0 would give each of them a different
    port; so, a port free on IPv4 is chosen in advance and used for all.
    """
    if addr:
        return 0
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('', 0))
        return int(sock.getsockname()[1])


def _get_listening_port(runner: aiohttp.web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:  # (host, port) or (host, port, flow, scope)
            return int(address[1])
    raise RuntimeError("The webhook server listens on no TCP port.")


@contextlib.contextmanager
def _temporary_files(*contents: bytes) -> Iterator[List[str]]:
    """
    Put the data into files for the time of the block.

    :meth:`ssl.SSLContext.load_cert_chain` reads only files, not in-memory data.
    The files are private to the user and are deleted right after the loading.
    """
    with tempfile.TemporaryDirectory(prefix='kopf-webhooks-') as tmpdir:
        paths: List[str] = []
        for index, content in enumerate(contents):
            path = os.path.join(tmpdir, f'{index}.pem')
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'wb') as f:
                f.write(content)
            paths.append(path)
        yield paths


async def _sleep_forever() -> None:
    await asyncio.Event().wait()
