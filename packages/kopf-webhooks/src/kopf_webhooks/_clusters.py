"""
Webhook servers for local development clusters: K3d/K3s, Minikube, Docker Desktop.

Such clusters run in containers or VMs on the developer's machine, and expose
the host machine to the cluster under a magic hostname. So a server listening
on the host's interfaces is reachable from the apiservers if the webhook URLs
and the certificate use that hostname instead of ``localhost``::

    settings.admission.server = kopf.WebhookK3dServer(port=54321)

The auto-server guesses the cluster type from the kubeconfig's current context,
as named by the tools themselves: ``k3d-<cluster>`` for K3d, ``minikube`` (or
``minikube-…``) for Minikube, ``docker-desktop`` for Docker Desktop. If it cannot tell, it is a plain local server.
"""
from __future__ import annotations

import os
import pathlib
import re
from typing import Iterable, Mapping, Optional

from kopf_webhooks import _servers

K3D_HOST = 'host.k3d.internal'
MINIKUBE_HOST = 'host.minikube.internal'
DOCKER_DESKTOP_HOST = 'host.docker.internal'

# The top-level "current-context" of a kubeconfig, in YAML or in JSON (both are valid kubeconfigs).
_CURRENT_CONTEXT = re.compile(r'''^\s*["']?current-context["']?\s*:\s*["']?([^"'\s,#]+)''', re.MULTILINE)


class WebhookK3dServer(_servers.WebhookServer):
    """
    A server for K3d/K3s clusters, reachable from them as ``host.k3d.internal``.

    The forwarding is maintained by K3d itself. The server only uses this
    hostname in the webhook URLs and in the self-signed certificate, so that
    the apiservers can connect and trust it; all traffic stays on the machine.
    """
    DEFAULT_HOST = K3D_HOST


class WebhookMinikubeServer(_servers.WebhookServer):
    """
    A server for Minikube clusters, reachable from them as ``host.minikube.internal``.

    The forwarding is maintained by Minikube itself. The server only uses this
    hostname in the webhook URLs and in the self-signed certificate, so that
    the apiservers can connect and trust it; all traffic stays on the machine.
    """
    DEFAULT_HOST = MINIKUBE_HOST


class WebhookDockerDesktopServer(_servers.WebhookServer):
    """
    A server for Docker Desktop's Kubernetes, reachable from it as ``host.docker.internal``.

    Docker Desktop resolves this hostname to the host machine inside its VM.
    The server only uses it in the webhook URLs and in the self-signed
    certificate, so that the apiservers can connect and trust it.
    """
    DEFAULT_HOST = DOCKER_DESKTOP_HOST


class ClusterDetector:
    """Guess the hostname under which a local cluster reaches the host machine."""

    @staticmethod
    def guess_host() -> Optional[str]:
        """The magic hostname of the current cluster, or ``None`` if unknown."""
        context = get_current_context(get_kubeconfig_paths(os.environ))
        if context is None:
            return None
        if context.startswith('k3d-'):
            return K3D_HOST
        if context == 'minikube' or context.startswith('minikube-'):
            return MINIKUBE_HOST
        if context == 'docker-desktop':
            return DOCKER_DESKTOP_HOST
        return None


class WebhookAutoServer(ClusterDetector, _servers.WebhookServer):
    """
    A local server that uses the magic hostname of K3d or Minikube if detected.

    In all other cases, it is a regular local server without hostname
    overrides. It never tunnels: for that, see :class:`WebhookAutoTunnel`.
    """

    def _get_hostname(self) -> str:
        return self.host or self.guess_host() or super()._get_hostname()


def get_kubeconfig_paths(environ: Mapping[str, str]) -> list[pathlib.Path]:
    """The kubeconfig files as kubectl finds them: ``$KUBECONFIG`` or ``~/.kube/config``."""
    kubeconfig = environ.get('KUBECONFIG', '')
    if kubeconfig:
        return [pathlib.Path(path).expanduser() for path in kubeconfig.split(os.pathsep) if path]
    return [pathlib.Path('~/.kube/config').expanduser()]


def get_current_context(paths: Iterable[pathlib.Path]) -> Optional[str]:
    """The first current context in the files, as kubectl merges them; missing files are skipped."""
    for path in paths:
        try:
            text = path.read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError):
            continue
        match = _CURRENT_CONTEXT.search(text)
        if match:
            return match.group(1)
    return None
