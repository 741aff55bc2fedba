"""
Admission webhook servers and tunnels for kopf-based operators.

This is the transport only: the servers receive the admission reviews and
pass them to the framework's function (``kopf.WebhookFn``), which runs the
``@kopf.on.validate``/``@kopf.on.mutate`` handlers. It is not a framework for
webhooks on its own. The names are usually accessed via ``kopf``::

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.admission.server = kopf.WebhookAutoServer(port=54321)
        settings.admission.managed = 'auto.kopf.dev'

Self-signed certificates need ``kopf-webhooks[dev]``; ngrok tunnels need
``kopf-webhooks[ngrok]``.
"""
from kopf_webhooks._certs import build_certificate
from kopf_webhooks._clusters import (
    ClusterDetector,
    WebhookAutoServer,
    WebhookDockerDesktopServer,
    WebhookK3dServer,
    WebhookMinikubeServer,
)
from kopf_webhooks._contexts import WebhookContextManager
from kopf_webhooks._errors import MissingDependencyError
from kopf_webhooks._servers import WebhookServer
from kopf_webhooks._tunnels import WebhookAutoTunnel, WebhookNgrokTunnel

__all__ = [
    'ClusterDetector',
    'MissingDependencyError',
    'WebhookAutoServer',
    'WebhookAutoTunnel',
    'WebhookContextManager',
    'WebhookDockerDesktopServer',
    'WebhookK3dServer',
    'WebhookMinikubeServer',
    'WebhookNgrokTunnel',
    'WebhookServer',
    'build_certificate',
]
