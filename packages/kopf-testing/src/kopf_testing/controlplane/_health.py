"""
The readiness checks of the control plane's servers, polled while they start.

Each answers whether its server is up, never raising for a server that is not
(yet) listening: a refused connection is just "not yet".
"""
import ssl

from . import _commands, _https, _ports


def etcd_is_healthy(layout: _commands.Layout, ports: _commands.Ports) -> bool:
    # etcd lets in only the holders of its CA's client certificates: we borrow the API server's.
    context = _https.make_ssl_context(
        ca_path=layout.pem('etcd-ca'), cert_path=layout.pem('apiserver-etcd-client'),
        key_path=layout.pem('apiserver-etcd-client-key'))
    try:
        status, body = _https.get(f'{_commands.etcd_client_url(ports)}/health', context=context, timeout=1.0)
    except OSError:
        return False
    return status == 200 and b'"health":"true"' in body


def has_default_namespace(server: str, context: ssl.SSLContext) -> bool:
    """The API server serves, and its controllers have created the default namespace."""
    try:
        status, _ = _https.get(f'{server}/api/v1/namespaces/default', context=context)
    except OSError:
        return False
    return status == 200


def controller_manager_is_healthy(ports: _commands.Ports) -> bool:
    # Its serving certificate is self-signed on the fly: nothing to verify it against.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    url = f'https://{_ports.HOST}:{ports.controller_manager}/healthz'
    try:
        status, _ = _https.get(url, context=context, timeout=1.0)
    except OSError:
        return False
    return status == 200
