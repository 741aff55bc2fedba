"""
Serving the admission handlers: the operator's side of ``settings.admission``.

When admission handlers exist, the operator runs ``settings.admission.server``
(a server or tunnel of kopf-webhooks, or the operator's own) with the
framework's :class:`~kopf._core.engines.webhooks.admission.AdmissionFn`. Each client
config the server yields goes into the managed webhook configurations, if
``settings.admission.managed`` is set. The server holds the control while it
serves; if it exits by itself, the operator exits too, as the manual says.

The same server serves the conversion functions (``@kopf.on.convert``): the
reviews are told apart by their kind, and with ``settings.admission.managed``,
the served CRDs' ``spec.conversion`` point at the server (see
:mod:`~kopf._core.engines.webhooks.conversionconfigs`).

The setup is checked before the operator makes any API request, so that a
missing server or package is one clear message rather than a failure later.
"""
from __future__ import annotations

import contextlib
import importlib.util
import logging
import re
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Dict, Mapping, Optional, Tuple, cast

from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references, reviews
from kopf._core.engines.webhooks import admission, conversion, conversionconfigs, webhookconfigs
from kopf._core.intents import registries

logger = logging.getLogger('kopf.engines.webhookserving')

# The webhook names are "{handler id}.{managed}": Kubernetes wants them fully qualified DNS names.
_DNS_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$')


def check_setup(*, registry: registries.OperatorRegistry, settings: configuration.OperatorSettings) -> None:
    """Refuse to serve the admission handlers without a usable server, with what to do about it."""
    if not is_needed(registry):
        return
    server = settings.admission.server
    if server is None:
        package = ("" if importlib.util.find_spec('kopf_webhooks') is not None else
                   " (it needs the 'kopf-webhooks' package: pip install kopf-webhooks)")
        what = "Admission handlers" if registry.has_webhook_handlers() else "Conversion functions"
        raise webhookconfigs.AdmissionSetupError(
            f"{what} exist, but no webhook server is configured: set settings.admission.server "
            f"in a @kopf.on.startup handler, e.g. to kopf.WebhookAutoServer(){package}.")
    if not callable(server):
        raise webhookconfigs.AdmissionSetupError(
            f"settings.admission.server must be a webhook server or tunnel (a callable that yields "
            f"client configs, e.g. kopf.WebhookServer()), not {server!r}.")
    managed = settings.admission.managed
    if managed is not None and (not isinstance(managed, str) or not _DNS_SUBDOMAIN.match(managed)):
        raise webhookconfigs.AdmissionSetupError(
            f"settings.admission.managed must be a DNS name of lowercase letters, digits, '-' and '.' "
            f"with at least one dot (e.g. 'auto.kopf.dev'), not {managed!r}.")


def is_needed(registry: registries.OperatorRegistry) -> bool:
    """Whether the operator serves webhooks at all: only if it has admission or conversion handlers."""
    return registry.has_webhook_handlers() or registry.has_conversion_handlers()


async def serve_admission(
        *,
        registry: registries.OperatorRegistry,
        settings: configuration.OperatorSettings,
        client: protocols.ApiClient,
        memo: Any,
        memo_of: Callable[[Mapping[str, Any]], Optional[Any]],
        indices: Mapping[str, Any],
) -> None:
    """Run the webhook server until cancelled; keep the managed configurations in sync with it."""
    resources: Dict[Tuple[str, str, str], references.Resource] = {}

    async def rescan() -> None:
        resources.update(await _scan_resources(client, registry))

    fn = ReviewsFn(
        admission=admission.AdmissionFn(admission.AdmissionContext(
            registry=registry, settings=settings, memo=memo, memo_of=memo_of, indices=indices,
            resources=resources)),
        conversion=conversion.ConversionFn(conversion.ConversionContext(
            registry=registry, settings=settings, memo=memo, memo_of=memo_of, indices=indices,
            resources=resources, rescan=rescan)))
    managed = settings.admission.managed
    crds = conversionconfigs.ManagedConversions(client, managed=managed) if managed is not None else None
    latest: Optional[reviews.WebhookClientConfig] = None
    try:
        async with _serving_errors(), _entered(settings.admission.server) as server:
            async with contextlib.aclosing(_as_generator(server(fn))) as client_configs:
                async for client_config in client_configs:
                    logger.debug(f"The webhooks are served at {_describe(client_config)}.")
                    resources.clear()
                    await rescan()
                    latest = client_config
                    if managed is not None and crds is not None:
                        await _apply_managed(client, registry, name=managed, client_config=client_config,
                                             resources=resources, crds=crds)
    finally:
        # On a graceful exit (incl. cancellation), keep only the persistent webhooks; restore the CRDs.
        if managed is not None and crds is not None and latest is not None:
            await _cleanup_managed(client, registry, name=managed, client_config=latest,
                                   resources=resources, crds=crds)
    raise webhookconfigs.AdmissionSetupError("The webhook server or tunnel has exited unexpectedly.")


class ReviewsFn:
    """
    The framework's :class:`kopf.WebhookFn`: each review goes to its engine by its kind.

    Conversion reviews go to the conversion functions, whatever the path;
    everything else is an admission review (or refused as a malformed one).
    """

    def __init__(self, *, admission: admission.AdmissionFn, conversion: conversion.ConversionFn) -> None:
        self.admission = admission
        self.conversion = conversion

    async def __call__(
            self,
            request: reviews.Request,
            *,
            webhook: Optional[str] = None,
            headers: Optional[reviews.Headers] = None,
            sslpeer: Optional[reviews.SSLPeer] = None,
    ) -> reviews.Response:
        kind: Any = request.get('kind') if isinstance(request, Mapping) else None  # typed as admission only
        if kind == 'ConversionReview':
            response = await self.conversion(request, webhook=webhook, headers=headers, sslpeer=sslpeer)
            return cast(reviews.Response, response)  # the protocol is typed for the admission reviews only
        return await self.admission(request, webhook=webhook, headers=headers, sslpeer=sslpeer)


async def _apply_managed(
        client: protocols.ApiClient,
        registry: registries.OperatorRegistry,
        *,
        name: str,
        client_config: reviews.WebhookClientConfig,
        resources: Mapping[Tuple[str, str, str], references.Resource],
        crds: conversionconfigs.ManagedConversions,
) -> None:
    """Point the managed configurations and CRDs at the server: only those of the existing handlers."""
    if registry.has_webhook_handlers():
        await webhookconfigs.apply_configurations(
            client, name=name, handlers_=registry.get_webhook_handlers(),
            client_config=client_config, resources=resources.values())
    if registry.has_conversion_handlers():
        names = conversionconfigs.select_crd_names(
            registry.get_conversion_handlers().get_all_handlers(), resources.values())
        await crds.apply(client_config, names)


async def _cleanup_managed(
        client: protocols.ApiClient,
        registry: registries.OperatorRegistry,
        *,
        name: str,
        client_config: reviews.WebhookClientConfig,
        resources: Mapping[Tuple[str, str, str], references.Resource],
        crds: conversionconfigs.ManagedConversions,
) -> None:
    try:
        if registry.has_webhook_handlers():
            await webhookconfigs.apply_configurations(
                client, name=name, handlers_=registry.get_webhook_handlers(),
                client_config=client_config, resources=resources.values(), persistent_only=True)
    finally:
        await crds.restore()


@contextlib.asynccontextmanager
async def _serving_errors() -> AsyncIterator[None]:
    """
    A server's missing dependency (e.g. ``cryptography`` for the certificates) is a setup problem.

    The servers explain what to install in their ``ImportError``; it is shown
    as is, as one line, rather than as a crash of the operator.
    """
    try:
        yield
    except ImportError as e:
        raise webhookconfigs.AdmissionSetupError(str(e)) from e


@contextlib.asynccontextmanager
async def _entered(server: Any) -> AsyncIterator[Any]:
    """The server itself, or what its async context manager gives, if it is one (see the manual)."""
    if hasattr(server, '__aenter__') and hasattr(server, '__aexit__'):
        async with server as entered:
            yield entered
    else:
        yield server


async def _as_generator(
        configs: AsyncIterator[reviews.WebhookClientConfig],
) -> AsyncGenerator[reviews.WebhookClientConfig, None]:
    """Any async iterator as a closeable generator, so that the server's cleanup runs on exit."""
    try:
        async for config in configs:
            yield config
    finally:
        aclose = getattr(configs, 'aclose', None)
        if aclose is not None:
            await aclose()


async def _scan_resources(
        client: protocols.ApiClient,
        registry: registries.OperatorRegistry,
) -> Dict[Tuple[str, str, str], references.Resource]:
    """The resources that the admission & conversion handlers may refer to (in their groups only, if known)."""
    selectors = [handler.selector for handler in registry.get_webhook_handlers() if handler.selector is not None]
    selectors.extend(registry.get_conversion_handlers().get_all_selectors())
    groups = {selector.group for selector in selectors}
    scanned = await client.scan_resources(groups=None if None in groups else {g for g in groups if g is not None})
    return {(resource.group, resource.version, resource.plural): resource for resource in scanned}


def _describe(client_config: reviews.WebhookClientConfig) -> str:
    service = client_config.get('service')
    if service:
        return f"service {service.get('namespace')}/{service.get('name')}:{service.get('port', 443)}"
    return str(client_config.get('url'))
