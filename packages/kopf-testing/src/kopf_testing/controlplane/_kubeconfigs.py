"""
Kubeconfig files for the local cluster, self-contained.

The CA, client certificate and key are embedded as base64 data rather than
referenced by path, so that a kubeconfig keeps working when copied elsewhere
(e.g. into a container, or read by a client that resolves paths differently).
They are written as JSON, which is YAML too: every client reads it, and no YAML
library is needed here.
"""
import base64
import json
import pathlib
from typing import Any

from . import _files

CLUSTER_NAME = 'kopf-controlplane'


def write_kubeconfig(
        path: pathlib.Path,
        *,
        server: str,
        ca_pem: bytes,
        user: str,
        cert_pem: bytes | None = None,
        key_pem: bytes | None = None,
        token: str | None = None,
) -> None:
    """Write a kubeconfig of one cluster, one user and one current context."""
    credentials: dict[str, Any] = {}
    if cert_pem is not None and key_pem is not None:
        credentials['client-certificate-data'] = _b64(cert_pem)
        credentials['client-key-data'] = _b64(key_pem)
    if token is not None:
        credentials['token'] = token
    context_name = f'{user}@{CLUSTER_NAME}'
    config = {
        'apiVersion': 'v1',
        'kind': 'Config',
        'clusters': [{'name': CLUSTER_NAME, 'cluster': {'server': server, 'certificate-authority-data': _b64(ca_pem)}}],
        'users': [{'name': user, 'user': credentials}],
        'contexts': [{'name': context_name, 'context': {'cluster': CLUSTER_NAME, 'user': user}}],
        'current-context': context_name,
        'preferences': {},
    }
    _files.write_private_file(path, json.dumps(config, indent=2) + '\n')  # it holds credentials


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode('ascii')
