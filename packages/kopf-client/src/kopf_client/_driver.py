"""
The entry point of the package for the framework: the client driver.

The framework finds it via the ``kopf.clients`` entry-point group (see the
package's ``pyproject.toml``), or gets it explicitly with
``kopf.run(client=kopf_client.driver)``.
"""
from __future__ import annotations

from typing import Awaitable, Callable, List, Mapping, Optional, Sequence, Union

import kopf
from kopf import clients
from kopf_client import _client, _kubeconfig, _piggybacking, _piggybacking_async, _reasons, _serviceaccount

LoginFn = Callable[..., Union[Optional[kopf.ConnectionInfo], Awaitable[Optional[kopf.ConnectionInfo]]]]


class AiohttpDriver:
    """Makes aiohttp-based API clients, and offers the login functions to use by default."""

    def create_client(
            self,
            *,
            vault: clients.Vault,
            settings: kopf.OperatorSettings,
    ) -> clients.ApiClient:
        return _client.AiohttpClient(vault=vault, settings=settings)

    def default_login_fns(self) -> Sequence[LoginFn]:
        """
        The login functions for operators that declare no ``@kopf.on.login`` handlers.

        All of them run (as login handlers), and each contributes the credentials
        it finds; their priorities decide which are used first, the others are
        used when those are rejected. As in Kopf 1.45, the installed libraries
        are piggybacked (they support more methods: ``exec`` plugins, OIDC):
        pykube-ng, and the official client (or its asyncio port, only when the
        synchronous one is absent). Only without any of them, the built-in ones
        are used: the service account and the kubeconfig.
        """
        fns: List[LoginFn] = []
        if _piggybacking.is_installed(_piggybacking.PYKUBE_MODULE):
            fns.append(_piggybacking.login_via_pykube)
        if _piggybacking.is_installed(_piggybacking.KUBERNETES_MODULE):
            fns.append(_piggybacking.login_via_client)
        elif _piggybacking.is_installed(_piggybacking_async.KUBERNETES_ASYNCIO_MODULE):
            fns.append(_piggybacking_async.login_via_async_client)
        if not fns:
            fns.append(_serviceaccount.login_with_service_account)
            fns.append(_kubeconfig.login_with_kubeconfig)
        return fns

    def explain_missing_credentials(self) -> Mapping[str, str]:
        """
        Why the default login functions have found nothing, by their names (for the login error).

        Those that have run say what they looked for; the piggybacking ones that were
        not tried say that their library is not installed.
        """
        tried = {getattr(fn, '__name__', '') for fn in self.default_login_fns()}
        reasons = {name: why for name, why in _reasons.noted().items() if name in tried}
        libraries = [('login_via_pykube', _piggybacking.PYKUBE_MODULE, 'pykube-ng'),
                     ('login_via_client', _piggybacking.KUBERNETES_MODULE, 'kubernetes')]
        if 'login_via_client' not in tried:
            libraries.append(('login_via_async_client', _piggybacking_async.KUBERNETES_ASYNCIO_MODULE,
                              'kubernetes_asyncio'))
        for name, module, package in libraries:
            if name not in tried and not _piggybacking.is_installed(module):
                reasons[name] = f"the {package!r} library is not installed"
        return reasons

    def __repr__(self) -> str:
        return f'<{type(self).__name__}>'


driver = AiohttpDriver()
