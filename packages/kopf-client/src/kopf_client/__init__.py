"""
The aiohttp-based Kubernetes API client for kopf.

It implements :class:`kopf.clients.ApiClient` and registers itself as the
``aiohttp`` driver of the ``kopf.clients`` entry-point group, so installing
this package is enough for ``kopf run`` or ``kopf.operator()`` to use it.
Embedding tools can pass it explicitly::

    import asyncio
    import kopf
    import kopf_client

    asyncio.run(kopf.operator(client=kopf_client.driver))

The login functions are the same as in Kopf (``kopf.login_via_pykube``,
``kopf.login_via_client``, ``kopf.login_via_async_client``, ``kopf.login_with_service_account``,
``kopf.login_with_kubeconfig``) and can be used in ``@kopf.on.login``
handlers to choose one authentication method explicitly.

This package is NOT a general-purpose Kubernetes client: it does only what
the framework needs, as declared by the protocol in :mod:`kopf.clients`.
"""
from kopf_client._client import AiohttpClient
from kopf_client._driver import AiohttpDriver, driver
from kopf_client._kubeconfig import login_with_kubeconfig
from kopf_client._piggybacking import login_via_client, login_via_pykube
from kopf_client._piggybacking_async import login_via_async_client
from kopf_client._serviceaccount import login_with_service_account
from kopf_client._sessions import AiohttpSession

__all__ = [
    'AiohttpClient',
    'AiohttpDriver',
    'AiohttpSession',
    'driver',
    'login_via_async_client',
    'login_via_client',
    'login_via_pykube',
    'login_with_kubeconfig',
    'login_with_service_account',
]
