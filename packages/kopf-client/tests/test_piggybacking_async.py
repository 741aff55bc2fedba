"""
Login piggybacked on kubernetes_asyncio: what is taken from its config.

The library is not installed in the test environment (it is optional), so a
minimal fake module with the same public names is injected instead (with the
newer library's coroutine for the token, and the older one's plain function).
"""
from __future__ import annotations

import logging
import pathlib
import sys
import types
from typing import Any, Dict, Optional

import pytest

import kopf
from kopf_client import login_via_async_client

LOGGER = logging.getLogger('test.login')


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubeconfig's raw values are checked in the files: never the developer's own ones."""
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.delenv('KUBECONFIG', raising=False)


def _fake_kubernetes_asyncio(
        monkeypatch: pytest.MonkeyPatch,
        *,
        in_cluster: Optional[Dict[str, Any]] = None,
        from_file: Optional[Dict[str, Any]] = None,
        awaitable_token: bool = True,
) -> None:
    loaded: Dict[str, Any] = {}

    class ConfigException(Exception):
        pass

    class Configuration:
        def __init__(self) -> None:
            self.host = loaded.get('host', 'http://localhost')
            self.ssl_ca_cert = loaded.get('ssl_ca_cert')
            self.verify_ssl = loaded.get('verify_ssl', True)
            self.cert_file = loaded.get('cert_file')
            self.key_file = loaded.get('key_file')
            self.username = loaded.get('username', '')
            self.password = loaded.get('password', '')

        @classmethod
        def get_default_copy(cls) -> Configuration:
            return cls()

        def get_api_key_with_prefix(self, key: str) -> Any:
            value = loaded.get('api_key', {}).get(key)
            if not awaitable_token:
                return value

            async def fetch() -> Any:
                return value
            return fetch()

    def load_incluster_config() -> None:
        if in_cluster is None:
            raise ConfigException('Service host/port is not set.')
        loaded.update(in_cluster)

    async def load_kube_config() -> None:
        if from_file is None:
            raise ConfigException('Invalid kube-config file. No configuration found.')
        loaded.update(from_file)

    def list_kube_config_contexts() -> Any:
        active = {'name': 'dev', 'context': {'cluster': 'dev', 'namespace': 'team-b'}}
        return [active], active

    # Imported modules are taken from sys.modules as they are: any object with the names will do.
    config = types.SimpleNamespace(ConfigException=ConfigException, load_incluster_config=load_incluster_config,
                                   load_kube_config=load_kube_config,
                                   list_kube_config_contexts=list_kube_config_contexts)
    client = types.SimpleNamespace(Configuration=Configuration)
    package = types.SimpleNamespace(config=config, client=client)
    monkeypatch.setitem(sys.modules, 'kubernetes_asyncio', package)
    monkeypatch.setitem(sys.modules, 'kubernetes_asyncio.config', config)
    monkeypatch.setitem(sys.modules, 'kubernetes_asyncio.client', client)


@pytest.mark.parametrize('awaitable_token', [True, False])
async def test_async_client_via_kubeconfig(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, awaitable_token: bool) -> None:
    _fake_kubernetes_asyncio(monkeypatch, awaitable_token=awaitable_token, from_file={
        'host': 'https://k8s.example', 'verify_ssl': False, 'cert_file': '/tmp/cert', 'key_file': '/tmp/key',
        'api_key': {'BearerToken': 'Bearer exec-token'},
    })
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = await login_via_async_client(logger=LOGGER)
    assert info == kopf.ConnectionInfo(
        server='https://k8s.example', insecure=True, certificate_path='/tmp/cert', private_key_path='/tmp/key',
        scheme='Bearer', token='exec-token', default_namespace='team-b', priority=15,
    )
    assert caplog.messages[0] == 'Async client is configured via kubeconfig file.'
    assert caplog.messages[1].startswith("TLS verification is off for https://k8s.example: ")  # as insecure
    assert len(caplog.messages) == 2


async def test_async_client_in_cluster(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_kubernetes_asyncio(monkeypatch, in_cluster={
        'host': 'https://10.96.0.1:443', 'ssl_ca_cert': '/var/run/ca.crt', 'api_key': {'BearerToken': 'sa-token'},
    })
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = await login_via_async_client(logger=LOGGER)
    assert info is not None
    assert (info.server, info.ca_path, info.scheme, info.token) == (
        'https://10.96.0.1:443', '/var/run/ca.crt', 'Bearer', 'sa-token')
    assert caplog.messages == ['Async client is configured in cluster with service account.']


async def test_async_client_without_any_config_gives_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_kubernetes_asyncio(monkeypatch)
    assert await login_via_async_client(logger=LOGGER) is None


async def test_async_client_not_installed_fails_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'kubernetes_asyncio', None)
    with pytest.raises(kopf.LoginError, match="'kubernetes_asyncio' library is not installed"):
        await login_via_async_client(logger=LOGGER)
