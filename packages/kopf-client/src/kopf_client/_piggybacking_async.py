"""
Authentication piggybacked on ``kubernetes_asyncio`` (the asyncio port of the official client).

As with the other libraries (see ``_piggybacking``), its config loaders are used
as they are: in-cluster first, then the kubeconfig (which may run ``exec`` plugins
or refresh OIDC tokens); only the result needed for HTTP requests is taken.
Among the default login functions, it is used only without the synchronous
``kubernetes`` library, which is preferred when both are installed.
"""
from __future__ import annotations

import importlib
import inspect
import os
from typing import Any, Optional

import kopf
from kopf_client import _kubeconfig, _piggybacking, _proxies, _tls

KUBERNETES_ASYNCIO_MODULE = 'kubernetes_asyncio'

# Between the synchronous client's and pykube's: higher priorities are tried first.
PRIORITY = 15


async def _login_via_async_client(*, logger: Any) -> Optional[kopf.ConnectionInfo]:
    """Log in with the configuration that ``kubernetes_asyncio`` finds: in-cluster first, then kubeconfig."""
    library = _piggybacking.import_library(KUBERNETES_ASYNCIO_MODULE, package='kubernetes_asyncio')
    importlib.import_module(f'{KUBERNETES_ASYNCIO_MODULE}.config')
    importlib.import_module(f'{KUBERNETES_ASYNCIO_MODULE}.client')
    in_cluster = False
    source: Optional[str] = None
    try:
        library.config.load_incluster_config()
        in_cluster = True
        logger.debug("Async client is configured in cluster with service account.")
    except library.config.ConfigException:
        try:
            await library.config.load_kube_config()
            logger.debug("Async client is configured via kubeconfig file.")
        except (library.config.ConfigException, OSError) as exc:
            _piggybacking.report_no_config(logger, 'Async client', exc, fn_name='login_via_async_client')
            return None
        # It reads the booleans as loosely as the synchronous client does (see `_piggybacking`).
        source = _kubeconfig.check_current_cluster(os.environ)

    config: Any = library.client.Configuration.get_default_copy()
    # The loaders put the token (with its scheme) here; for exec plugins and auth providers,
    # this call runs them (it is a coroutine in the newer versions of the library).
    header: Any = config.get_api_key_with_prefix('BearerToken')
    if inspect.isawaitable(header):
        header = await header
    scheme, token = _piggybacking.split_authorization(header)

    info = _piggybacking.client_connection_info(config, scheme=scheme, token=token, priority=PRIORITY,
                                                namespace=await _namespace(library, in_cluster=in_cluster))
    _tls.warn_if_insecure(info, logger=logger, source=source)
    return info


async def _namespace(library: Any, *, in_cluster: bool) -> Optional[str]:
    if in_cluster:
        return _piggybacking.pod_namespace()
    try:
        contexts: Any = library.config.list_kube_config_contexts()
        if inspect.isawaitable(contexts):
            contexts = await contexts
        _, active = contexts
    except Exception:  # the config was loaded just now; any failure here is cosmetic
        return None
    namespace: Optional[str] = ((active or {}).get('context') or {}).get('namespace')
    return namespace or None


async def login_via_async_client(
        *,
        logger: Any,
        settings: Optional[kopf.OperatorSettings] = None,
        **_: Any,
) -> Optional[kopf.ConnectionInfo]:
    """Log in with the configuration that ``kubernetes_asyncio`` finds (with ``settings.networking.trust_env``)."""
    return _proxies.trusting_env(await _login_via_async_client(logger=logger), settings)
