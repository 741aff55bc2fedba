"""
Servers for local clusters: their magic hostnames, and guessing the cluster type.

The kubeconfigs are real files in a temporary directory, found via $KUBECONFIG
as kubectl finds them; the servers are real, listening on 127.0.0.1.
"""
from __future__ import annotations

import pathlib
from typing import Any, Callable, Optional

import pytest

from kopf_webhooks import (
    ClusterDetector,
    WebhookAutoServer,
    WebhookDockerDesktopServer,
    WebhookK3dServer,
    WebhookMinikubeServer,
    WebhookServer,
)

KUBECONFIG = '''
apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://0.0.0.0:6443
  name: {context}
contexts:
- context:
    cluster: {context}
    user: admin
  name: {context}
current-context: {context}
users:
- name: admin
  user: {{}}
'''


@pytest.fixture()
def kubeconfig(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], pathlib.Path]:
    """Make the current context of the kubeconfig as given."""
    path = tmp_path / 'kubeconfig'
    monkeypatch.setenv('KUBECONFIG', str(path))

    def write_kubeconfig(context: str) -> pathlib.Path:
        path.write_text(KUBECONFIG.format(context=context))
        return path

    return write_kubeconfig


@pytest.mark.parametrize('cls, hostname', [
    pytest.param(WebhookK3dServer, 'host.k3d.internal', id='k3d'),
    pytest.param(WebhookMinikubeServer, 'host.minikube.internal', id='minikube'),
    pytest.param(WebhookDockerDesktopServer, 'host.docker.internal', id='docker-desktop'),
])
async def test_local_cluster_servers_report_their_magic_hostnames(
        start: Any, cls: type[WebhookServer], hostname: str,
) -> None:
    client_config = await start(cls(addr='127.0.0.1', path='/admission'))
    assert client_config['url'].startswith(f'https://{hostname}:')
    assert client_config['url'].endswith('/admission')


@pytest.mark.parametrize('cls, hostname', [
    pytest.param(WebhookK3dServer, 'host.k3d.internal', id='k3d'),
    pytest.param(WebhookMinikubeServer, 'host.minikube.internal', id='minikube'),
    pytest.param(WebhookDockerDesktopServer, 'host.docker.internal', id='docker-desktop'),
])
async def test_local_cluster_servers_are_trusted_under_their_magic_hostnames(
        start: Any, post: Any, cls: type[WebhookServer], hostname: str,
) -> None:
    client_config = await start(cls(addr='127.0.0.1'))
    port = client_config['url'].rsplit(':', 1)[1]
    reply = await post(client_config, '/validate1', url=f'https://127.0.0.1:{port}', server_hostname=hostname)
    assert reply.status == 200


async def test_local_cluster_servers_accept_a_host_override(start: Any) -> None:
    client_config = await start(WebhookK3dServer(addr='127.0.0.1', host='example.com'))
    assert client_config['url'].startswith('https://example.com:')


@pytest.mark.parametrize('context, hostname', [
    pytest.param('k3d-mycluster', 'host.k3d.internal', id='k3d'),
    pytest.param('minikube', 'host.minikube.internal', id='minikube'),
    pytest.param('docker-desktop', 'host.docker.internal', id='docker-desktop-context'),
    pytest.param('minikube-profile', 'host.minikube.internal', id='minikube-profile'),
    pytest.param('docker-desktop', 'host.docker.internal', id='docker-desktop'),
    pytest.param('kind-kind', None, id='kind'),
    pytest.param('my-k3d-cluster', None, id='k3d-not-as-a-prefix'),
])
def test_cluster_type_is_guessed_from_the_current_context(
        kubeconfig: Callable[[str], pathlib.Path], context: str, hostname: Optional[str],
) -> None:
    kubeconfig(context)
    assert ClusterDetector.guess_host() == hostname


def test_cluster_type_is_unknown_without_a_kubeconfig(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv('KUBECONFIG', str(tmp_path / 'absent'))
    assert ClusterDetector.guess_host() is None


def test_cluster_type_is_unknown_without_a_current_context(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / 'kubeconfig'
    path.write_text('apiVersion: v1\nkind: Config\ncurrent-context: ""\n')
    monkeypatch.setenv('KUBECONFIG', str(path))
    assert ClusterDetector.guess_host() is None


def test_current_context_is_taken_from_the_first_kubeconfig_that_has_it(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / 'first').write_text('apiVersion: v1\nkind: Config\nclusters: []\n')
    (tmp_path / 'second').write_text('current-context: minikube\n')
    (tmp_path / 'third').write_text('current-context: k3d-cluster\n')
    paths = [tmp_path / 'absent', tmp_path / 'first', tmp_path / 'second', tmp_path / 'third']
    monkeypatch.setenv('KUBECONFIG', ':'.join(str(path) for path in paths))
    assert ClusterDetector.guess_host() == 'host.minikube.internal'


def test_current_context_is_read_from_json_kubeconfigs(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / 'kubeconfig'
    path.write_text('{"apiVersion": "v1", "kind": "Config",\n "current-context": "k3d-cluster", "contexts": []}')
    monkeypatch.setenv('KUBECONFIG', str(path))
    assert ClusterDetector.guess_host() == 'host.k3d.internal'


def test_kubeconfig_defaults_to_the_home_directory(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / '.kube').mkdir()
    (tmp_path / '.kube' / 'config').write_text('current-context: k3d-cluster\n')
    monkeypatch.delenv('KUBECONFIG', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    assert ClusterDetector.guess_host() == 'host.k3d.internal'


@pytest.mark.parametrize('context, hostname', [
    pytest.param('k3d-mycluster', 'host.k3d.internal', id='k3d'),
    pytest.param('minikube', 'host.minikube.internal', id='minikube'),
    pytest.param('docker-desktop', 'host.docker.internal', id='docker-desktop-context'),
    pytest.param('kind-kind', '127.0.0.1', id='unknown'),
])
async def test_auto_server_uses_the_guessed_hostname_or_its_address(
        start: Any, post: Any, kubeconfig: Callable[[str], pathlib.Path], context: str, hostname: str,
) -> None:
    kubeconfig(context)
    client_config = await start(WebhookAutoServer(addr='127.0.0.1'))
    assert client_config['url'].startswith(f'https://{hostname}:')
    port = client_config['url'].rsplit(':', 1)[1]
    reply = await post(client_config, url=f'https://127.0.0.1:{port}', server_hostname=hostname)
    assert reply.status == 200


async def test_auto_server_prefers_the_host_override(
        start: Any, kubeconfig: Callable[[str], pathlib.Path],
) -> None:
    kubeconfig('k3d-mycluster')
    client_config = await start(WebhookAutoServer(addr='127.0.0.1', host='example.com'))
    assert client_config['url'].startswith('https://example.com:')
