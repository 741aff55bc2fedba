"""
In-cluster authentication with the pod's service account.

Kubernetes mounts the service account's token, the cluster's CA, and the
pod's namespace as files into every pod (unless disabled), and tells the
API server's address in the ``KUBERNETES_SERVICE_HOST``/``_PORT`` variables.
Both must be present: a token file alone (e.g. a copy on a laptop) does not
mean that the API server is reachable as in a cluster.

The token is read anew on every login: projected tokens are rotated by the
kubelet, and a re-login after a 401 picks up the new one.
"""
from __future__ import annotations

import os
import pathlib
from typing import Any, Mapping, Optional

import kopf
from kopf_client import _proxies, _reasons

SERVICE_ACCOUNT_DIR = pathlib.Path('/var/run/secrets/kubernetes.io/serviceaccount')


# Above the kubeconfig's: in a pod, its own identity wins over a kubeconfig in its image.
PRIORITY = 20

def login_with_service_account(
        *,
        settings: Optional[kopf.OperatorSettings] = None,
        **kwargs: Any,
) -> Optional[kopf.ConnectionInfo]:
    """
    A minimalistic login handler that gets the credentials of the pod's service account.

    Only the mounted files and the environment variables are used, with no
    token exchange or refreshing: it makes an operator runnable in a cluster
    with no other client library installed. ``None`` if not in a cluster.
    """
    info = read_service_account(SERVICE_ACCOUNT_DIR, os.environ)
    if info is None:
        _reasons.nothing_found('login_with_service_account', why_not_in_cluster(SERVICE_ACCOUNT_DIR, os.environ))
    logger = kwargs.get('logger')
    if info is not None and logger is not None:
        logger.debug("Client is configured in cluster with service account.")
    return _proxies.trusting_env(info, settings)


def why_not_in_cluster(directory: pathlib.Path, environ: Mapping[str, str]) -> str:
    """What is missing for the service account's login, in words for the login error."""
    missing = []
    if not environ.get('KUBERNETES_SERVICE_HOST', '').strip():
        missing.append("$KUBERNETES_SERVICE_HOST is not set")
    if not (directory / 'token').is_file():
        missing.append(f"no token file at {directory / 'token'}")
    return f"not in a cluster: {', and '.join(missing)}"


def read_service_account(directory: pathlib.Path, environ: Mapping[str, str]) -> Optional[kopf.ConnectionInfo]:
    """The credentials from the service account's files in a directory; ``None`` if not in a cluster."""
    token_path = directory / 'token'
    host = environ.get('KUBERNETES_SERVICE_HOST', '').strip()
    if not host or not token_path.is_file():
        return None
    port = environ.get('KUBERNETES_SERVICE_PORT', '').strip() or '443'
    if ':' in host and not host.startswith('['):  # IPv6 addresses need brackets in URLs
        host = f'[{host}]'

    ca_path = directory / 'ca.crt'
    namespace_path = directory / 'namespace'
    namespace = namespace_path.read_text(encoding='utf-8').strip() if namespace_path.is_file() else ''
    return kopf.ConnectionInfo(
        server=f'https://{host}:{port}',
        ca_path=str(ca_path) if ca_path.is_file() else None,
        scheme='Bearer',
        token=token_path.read_text(encoding='utf-8').strip(),
        default_namespace=namespace or None,
        priority=PRIORITY,
    )
