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
import logging
import pathlib
import ssl
from typing import TYPE_CHECKING, AsyncGenerator, Iterable, List, Optional

import aiohttp.web

from kopf_webhooks import _addresses, _certs, _connections, _contexts, _parsing, _requests, _tls
from kopf_webhooks._tls import StrPath as StrPath  # re-exported: the tunnels accept the same paths

if TYPE_CHECKING:
    from kopf import WebhookClientConfig, WebhookFn

logger = logging.getLogger('kopf.webhooks')

# How long a stopping server lets the reviews in progress finish: as long as the API server waits
# for a review by default (10 s), not aiohttp's 60 s, which is longer than the 30 s that Kubernetes
# gives a pod to stop. (The API server keeps its connections open and may go on sending reviews.)
SHUTDOWN_TIMEOUT = 10.0

# How long a connection is kept open to read and drop the unread rest of a body, once the response is sent
# (e.g. after a timeout or an oversized body), so that the client gets the response rather than a reset.
LINGERING_TIME = 2.0


class WebhookServer(_contexts.WebhookContextManager):
    """
    A local HTTP/HTTPS endpoint, currently based on aiohttp.

    ``addr:port`` is where to listen: all interfaces and a free port by default.
    ``path`` is the root path of the webhooks. ``host`` overrides the hostname
    in the webhook URLs; by default, it is ``addr`` (``127.0.0.1``/``::1`` for
    all interfaces, ``localhost`` if none).

    Kubernetes accepts only HTTPS, so that is the default. ``certfile`` &
    ``pkeyfile`` (with an optional ``password``) are the server's certificate;
    without them, one is generated for the host, ``addr``, ``localhost``,
    ``127.0.0.1`` and ``extra_sans``, signed by a generated CA (the key is
    encrypted with the ``password`` if given). ``context`` is the SSL context
    to start with (e.g. with its own protocols & ciphers): the certificate and
    the client verification are loaded into it, as into the default one.

    ``cadata``/``cafile`` is the CA bundle for the clients (the apiservers) to
    verify this server, not used by the server itself. Without them, it is the
    ``certfile`` itself (its chain), as in Kopf; for a generated certificate,
    it is always the generated CA. ``cadump`` is a path to save that
    CA bundle to, e.g. for ``curl --cacert``.

    ``certfile``, ``pkeyfile`` and ``cafile`` are re-read every
    ``file_check_interval`` seconds (60 by default). When they change (e.g.
    renewed by cert-manager), the new certificate is loaded into the server's
    SSL context: new connections get it, the established ones keep the old one,
    the server keeps listening. If the CA bundle for the clients changes, a new
    client config is yielded, so that the managed webhook configurations get it.
    Files that cannot be loaded (e.g. half-written) are tried again at the next
    check; meanwhile, the previous certificate is served.

    ``verify_mode``, ``verify_cafile``, ``verify_capath``, ``verify_cadata`` go
    into the SSL context to verify the clients' certificates; the verified
    certificates reach the handlers as ``sslpeer``. With a CA for the clients,
    only the clients with a certificate that it verifies are served
    (``ssl.CERT_REQUIRED``); ``verify_mode=ssl.CERT_OPTIONAL`` serves the
    clients without certificates too (Kopf's default), with ``sslpeer=None``;
    ``ssl.CERT_NONE`` with a CA is taken as ``ssl.CERT_OPTIONAL``, as in Kopf.

    ``insecure=True`` serves plain HTTP: Kubernetes will not use it, but it is
    fine for ``curl`` or as a local endpoint of an HTTPS tunnel.

    The clients' connections are limited in time (class attributes, which
    can be changed on the class or on an instance before it serves):
    ``head_timeout`` for the TLS handshake and then for each request's line and
    headers, ``body_timeout`` for each request's body after its headers,
    ``idle_timeout`` for a kept-alive connection between the requests.
    A body is at most 8 MiB, nested at most 1,000 levels deep.
    """

    DEFAULT_HOST: Optional[str] = None  # the hostname for the URLs & certificates, if not ``host``

    # The time limits of the clients' connections, in seconds (see the class's docstring).
    head_timeout: float = 5.0
    body_timeout: float = 30.0  # as long as the apiservers wait for a review at most
    idle_timeout: float = 60.0

    addr: Optional[str]
    port: Optional[int]
    path: Optional[str]
    host: Optional[str]
    cadata: Optional[bytes]
    cafile: Optional[StrPath]
    cadump: Optional[StrPath]
    context: Optional[ssl.SSLContext]
    insecure: bool
    certfile: Optional[StrPath]
    pkeyfile: Optional[StrPath]
    password: Optional[str]
    extra_sans: Iterable[str]
    verify_mode: Optional[ssl.VerifyMode]
    verify_cafile: Optional[StrPath]
    verify_capath: Optional[StrPath]
    verify_cadata: Optional[str | bytes]
    file_check_interval: float

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
            cafile: Optional[StrPath] = None,
            cadump: Optional[StrPath] = None,
            # A pre-configured SSL context (if any):
            context: Optional[ssl.SSLContext] = None,
            # The server's own certificate, or lack of it (loaded into the context):
            insecure: bool = False,
            certfile: Optional[StrPath] = None,
            pkeyfile: Optional[StrPath] = None,
            password: Optional[str] = None,
            # Generated certificate's extra info.
            extra_sans: Iterable[str] = (),
            # Verification of client certificates (loaded into the context):
            verify_mode: Optional[ssl.VerifyMode] = None,
            verify_cafile: Optional[StrPath] = None,
            verify_capath: Optional[StrPath] = None,
            verify_cadata: Optional[str | bytes] = None,
            # File re-reading interval for cert renewals:
            file_check_interval: float = 60.0,
    ) -> None:
        super().__init__()
        _check_options(insecure=insecure, context=context, certfile=certfile, pkeyfile=pkeyfile,
                       file_check_interval=file_check_interval)
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
        self.file_check_interval = file_check_interval

    build_certificate = staticmethod(_certs.build_certificate)

    async def _serve(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        hostname = self._get_hostname()
        self._warn_about_unused_options()
        tls = self._build_tls(hostname)
        stripped_path = (self.path or '').strip('/')
        root = f'/{stripped_path}' if stripped_path else ''

        connections = _connections.Connections(head_timeout=self.head_timeout)
        app = aiohttp.web.Application(
            client_max_size=_requests.MAX_REVIEW_SIZE,
            middlewares=[_connections.build_middleware(connections)],
        )
        handler = _requests.build_handler(fn, parser=_parsing.JsonParser(), body_timeout=self.body_timeout)
        app.router.add_post(f'{root}/{{webhook:.*}}', handler)
        if root:
            app.router.add_post(root, handler)
        runner = aiohttp.web.AppRunner(
            app, handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT,
            keepalive_timeout=self.idle_timeout, lingering_time=LINGERING_TIME,
        )
        await runner.setup()
        try:
            port = self.port or _addresses.get_free_port(self.addr)
            site = _connections.GuardedSite(runner, self.addr or None, port,
                                            connections=connections, ssl_context=tls.context)
            await site.start()
            port = _addresses.get_listening_port(runner)
            schema = 'http' if tls.context is None else 'https'
            url = f"{schema}://{_addresses.format_host(hostname)}:{port}{root}"
            listened = _addresses.format_host(self.addr or '*')
            logger.debug(f"Listening for webhooks at {schema}://{listened}:{port}{root}")
            logger.debug(f"Accessing the webhooks at {url}")

            client_config = _build_client_config(url, tls.cadata)
            yield client_config

            # Serve until the consumer closes or cancels the iteration; meanwhile, follow the files.
            if not tls.files:
                await _sleep_forever()
            while True:
                await asyncio.sleep(self.file_check_interval)
                if await self._reload_tls(tls):
                    renewed = _build_client_config(url, tls.cadata)
                    if renewed != client_config:
                        client_config = renewed
                        yield client_config
        finally:
            await runner.cleanup()

    def _get_hostname(self) -> str:
        """The hostname to put into the URLs: the explicit one, the class's default, or the listened one."""
        return self.host or self.DEFAULT_HOST or _addresses.get_accessible_addr(self.addr)

    def _warn_about_unused_options(self) -> None:
        """Some combinations leave some options without effect (as in Kopf): say so rather than ignore them."""
        if self.insecure:
            unused = [name for name, value in [
                ('certfile', self.certfile), ('pkeyfile', self.pkeyfile), ('password', self.password),
                ('verify_mode', self.verify_mode), ('verify_cafile', self.verify_cafile),
                ('verify_capath', self.verify_capath), ('verify_cadata', self.verify_cadata),
            ] if value is not None]
            if unused:
                logger.warning(f"The insecure webhook server (plain HTTP) uses no {', '.join(unused)}.")
        elif self.certfile is None and (self.cadata is not None or self.cafile is not None):
            logger.warning("The generated certificate is verified by its generated CA: it goes to the webhooks' "
                           "caBundle instead of the given cadata/cafile (provide certfile & pkeyfile to use those).")

    def _build_tls(self, hostname: str) -> _tls.Tls:
        """The CA bundle for the clients (if any), the server's SSL context (none if insecure), the files used."""
        if self.insecure:
            files = _tls.TlsFiles(cafile=self.cafile if self.cadata is None else None)
            contents = files.read()
            tls = _tls.Tls(context=None, cadata=self.cadata or contents.ca, files=files, digest=contents.digest)
        else:
            # Not create_default_context(): it trusts the system CAs for the clients' certificates,
            # so any publicly issued certificate would reach the handlers as a verified sslpeer.
            context = self.context if self.context is not None else ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._set_verification(context)
            if self.certfile is not None and self.pkeyfile is not None:
                files = _tls.TlsFiles(certfile=self.certfile, pkeyfile=self.pkeyfile,
                                  cafile=self.cafile if self.cadata is None else None)
                contents = files.read()
                _tls.load_cert_chain(context, contents.cert or b'', contents.pkey or b'', self.password)
                cadata = self._get_cadata(contents)
                tls = _tls.Tls(context=context, cadata=cadata, files=files, digest=contents.digest)
            else:
                chain, pkey = self.build_certificate(self._get_sans(hostname), self.password)
                _tls.load_cert_chain(context, chain, pkey, self.password)
                tls = _tls.Tls(context=context, cadata=_certs.get_ca(chain), files=_tls.TlsFiles(), digest=None)
        self._dump_cadata(tls.cadata)
        return tls

    async def _reload_tls(self, tls: _tls.Tls) -> bool:
        """
        Load the changed certificate files into the server's SSL context; return whether the CA bundle changed.

        The files are read once; the same contents are first loaded into a scratch context
        (so that a broken or half-written pair does not spoil the served context), then into
        the served one. Failures are logged once per failing content, and retried at the next check.
        """
        try:
            contents = await asyncio.to_thread(tls.files.read)  # not to block the operator on slow filesystems
        except OSError as e:
            if tls.read_error != str(e):
                tls.read_error = str(e)
                logger.warning(f"The webhook server's certificate files cannot be read: {e}; "
                               f"the previous certificate is still served.")
            return False
        tls.read_error = None
        if contents.digest == tls.digest or contents.digest == tls.rejected:
            return False
        if tls.context is not None and contents.cert is not None and contents.pkey is not None:
            try:
                _tls.load_cert_chain(tls.context, contents.cert, contents.pkey, self.password, check=True)
            except (ssl.SSLError, ValueError, OSError) as e:
                tls.rejected = contents.digest
                logger.warning(f"The changed certificate files of the webhook server cannot be loaded: {e}; "
                               f"the previous certificate is still served.")
                return False
        tls.digest = contents.digest
        tls.rejected = None
        cadata = (self.cadata or contents.ca) if self.insecure else self._get_cadata(contents)
        changed = cadata != tls.cadata
        tls.cadata = cadata
        self._dump_cadata(cadata)
        logger.info("The webhook server's certificate files have changed: new connections use them.")
        return changed

    def _set_verification(self, context: ssl.SSLContext) -> None:
        """Load the CA to verify the clients' certificates, and require them by default if there is one."""
        if self.verify_cafile is not None or self.verify_capath is not None or self.verify_cadata is not None:
            context.load_verify_locations(
                cafile=self.verify_cafile,
                capath=self.verify_capath,
                cadata=self.verify_cadata,
            )
            if self.verify_mode is None:
                if context.verify_mode == ssl.CERT_NONE:
                    context.verify_mode = ssl.CERT_REQUIRED  # Kopf: CERT_OPTIONAL, i.e. anyone without a cert
            elif self.verify_mode == ssl.CERT_NONE:
                context.verify_mode = ssl.CERT_OPTIONAL  # a CA that verifies nothing is a mistake; as in Kopf
            else:
                context.verify_mode = self.verify_mode
        elif self.verify_mode is not None:
            context.verify_mode = self.verify_mode

    def _get_sans(self, hostname: str) -> List[str]:
        # The reported hostname goes first, to become the certificate's common name.
        candidates = [hostname, self.addr, *self.extra_sans, 'localhost', '127.0.0.1']
        return [candidate for candidate in candidates if candidate]

    def _get_cadata(self, contents: _tls.TlsContents) -> Optional[bytes]:
        """The CA bundle to report for the provided certificate: the given one, or the certificate itself."""
        if self.cadata is not None:
            return self.cadata
        return contents.ca if contents.ca is not None else contents.cert

    def _dump_cadata(self, cadata: Optional[bytes]) -> None:
        if cadata is not None and self.cadump is not None:
            pathlib.Path(self.cadump).write_bytes(cadata)


def _check_options(
        *,
        insecure: bool,
        context: Optional[ssl.SSLContext],
        certfile: Optional[StrPath],
        pkeyfile: Optional[StrPath],
        file_check_interval: float,
) -> None:
    """Refuse the contradicting or impossible options of a server, before it is used."""
    if insecure and context is not None:
        raise ValueError("The insecure mode cannot have an SSL context.")
    if (certfile is None) != (pkeyfile is None):
        raise ValueError("Both certfile= and pkeyfile= must be given, or neither.")
    if not file_check_interval > 0:
        raise ValueError(f"file_check_interval= must be a positive number of seconds, not {file_check_interval!r}.")


def _build_client_config(url: str, cadata: Optional[bytes]) -> WebhookClientConfig:
    client_config: WebhookClientConfig = {'url': url}
    if cadata is not None:
        client_config['caBundle'] = base64.b64encode(cadata).decode('ascii')
    return client_config


async def _sleep_forever() -> None:
    await asyncio.Event().wait()
