"""
The entry point of the package for the framework: the client driver.

The framework finds it via the ``kopf.clients`` entry-point group (see the
package's ``pyproject.toml``), or gets it explicitly with
``kopf.run(client=kopf_client.driver)``.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import kopf
from kopf import clients
from kopf_client import _client, _kubeconfig, _piggybacking, _serviceaccount

LoginFn = Callable[..., Optional[kopf.ConnectionInfo]]


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

        The caller tries them in this order and uses the first non-``None``
        result. The piggybacking ones come first (and only if their library is
        installed): they support more authentication methods, including
        ``exec`` plugins and OIDC. Then the built-in ones: the service account
        before the kubeconfig, so that a pod uses its own identity even if a
        kubeconfig happens to be in its image.
        """
        fns: List[LoginFn] = []
        if _piggybacking.is_installed(_piggybacking.PYKUBE_MODULE):
            fns.append(_piggybacking.login_via_pykube)
        if _piggybacking.is_installed(_piggybacking.KUBERNETES_MODULE):
            fns.append(_piggybacking.login_via_client)
        fns.append(_serviceaccount.login_with_service_account)
        fns.append(_kubeconfig.login_with_kubeconfig)
        return fns

    def __repr__(self) -> str:
        return f'<{type(self).__name__}>'


driver = AiohttpDriver()
