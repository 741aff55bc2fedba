"""
Login piggybacked on pykube-ng and kubernetes: what is taken from their configs.

The libraries are not installed in the test environment (they are optional),
so minimal fake modules with the same public names are injected instead.
This checks the mapping of the libraries' results to ``ConnectionInfo``;
whether the real libraries still expose those names is for the integration
tests with the libraries installed.
"""
from __future__ import annotations

import importlib.machinery
import logging
import sys
import types
from typing import Any, Dict, Optional

import pytest

import kopf
from kopf_client import login_via_async_client, login_via_client, login_via_pykube

LOGGER = logging.getLogger('test.login')


class _Bytes:
    """Like pykube's wrapper of certificates given as files or data."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def bytes(self) -> bytes:
        return self._data


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def _fake_pykube(
        monkeypatch: pytest.MonkeyPatch,
        *,
        in_cluster: Optional[Dict[str, Any]] = None,
        from_file: Optional[Dict[str, Any]] = None,
        sent_authorization: Optional[str] = None,
) -> None:
    class PyKubeError(Exception):
        pass

    class KubeConfig:
        def __init__(self, doc: Dict[str, Any]) -> None:
            self.cluster = doc['cluster']
            self.user = doc['user']
            self.namespace = doc.get('namespace', 'default')

        @classmethod
        def from_service_account(cls) -> KubeConfig:
            if in_cluster is None:
                raise FileNotFoundError('/var/run/secrets/kubernetes.io/serviceaccount/token')
            return cls(in_cluster)

        @classmethod
        def from_file(cls) -> KubeConfig:
            if from_file is None:
                raise PyKubeError('Configuration file ~/.kube/config not found')
            return cls(from_file)

    class HTTPClient:
        def __init__(self, config: KubeConfig) -> None:
            self.config = config

        def get(self, **_: Any) -> Any:
            request = types.SimpleNamespace(headers={'Authorization': sent_authorization})
            return types.SimpleNamespace(status_code=403, request=request)

    exceptions = _module('pykube.exceptions', PyKubeError=PyKubeError)
    pykube = _module('pykube', KubeConfig=KubeConfig, HTTPClient=HTTPClient, exceptions=exceptions)
    monkeypatch.setitem(sys.modules, 'pykube', pykube)
    monkeypatch.setitem(sys.modules, 'pykube.exceptions', exceptions)


def _fake_kubernetes(
        monkeypatch: pytest.MonkeyPatch,
        *,
        in_cluster: Optional[Dict[str, Any]] = None,
        from_file: Optional[Dict[str, Any]] = None,
        namespace: Optional[str] = None,
        module: str = 'kubernetes',
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
            self.username = loaded.get('username')
            self.password = loaded.get('password')
            self.api_key = loaded.get('api_key', {})
            self.api_key_prefix = loaded.get('api_key_prefix', {})

        @classmethod
        def get_default_copy(cls) -> Configuration:
            return cls()

    def load_incluster_config() -> None:
        if in_cluster is None:
            raise ConfigException('Service host/port is not set.')
        loaded.update(in_cluster)

    def load_kube_config() -> None:
        if from_file is None:
            raise ConfigException('Invalid kube-config file. No configuration found.')
        loaded.update(from_file)

    async def load_kube_config_async() -> None:  # kubernetes_asyncio's loader is a coroutine
        load_kube_config()

    def list_kube_config_contexts() -> Any:
        active = {'name': 'dev', 'context': {'cluster': 'dev', 'namespace': namespace}}
        return [active], active

    is_async = module == 'kubernetes_asyncio'
    config = _module(f'{module}.config', ConfigException=ConfigException,
                     load_incluster_config=load_incluster_config,
                     load_kube_config=load_kube_config_async if is_async else load_kube_config,
                     list_kube_config_contexts=list_kube_config_contexts)
    client = _module(f'{module}.client', Configuration=Configuration)
    kubernetes = _module(module, config=config, client=client)
    monkeypatch.setitem(sys.modules, module, kubernetes)
    monkeypatch.setitem(sys.modules, f'{module}.config', config)
    monkeypatch.setitem(sys.modules, f'{module}.client', client)


def test_pykube_in_cluster(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_pykube(monkeypatch, in_cluster={
        'cluster': {'server': 'https://10.96.0.1:443', 'certificate-authority': _Bytes(b'CA')},
        'user': {'token': 'sa-token'},
        'namespace': 'operators',
    })
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = login_via_pykube(logger=LOGGER)
    assert info == kopf.ConnectionInfo(
        server='https://10.96.0.1:443', ca_data=b'CA', scheme='Bearer', token='sa-token',
        default_namespace='operators', priority=20,
    )
    assert caplog.messages == ['Pykube is configured in cluster with service account.']


def test_pykube_via_kubeconfig(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_pykube(monkeypatch, from_file={
        'cluster': {'server': 'https://k8s.example', 'insecure-skip-tls-verify': True},
        'user': {'client-certificate': _Bytes(b'CERT'), 'client-key': _Bytes(b'KEY'),
                 'username': 'admin', 'password': 'secret'},
    })
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = login_via_pykube(logger=LOGGER)
    assert info == kopf.ConnectionInfo(
        server='https://k8s.example', insecure=True,
        certificate_data=b'CERT', private_key_data=b'KEY', username='admin', password='secret',
        default_namespace='default', priority=20,
    )
    assert caplog.messages == ['Pykube is configured via kubeconfig file.']


def test_pykube_exec_plugins_give_the_token_they_have_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pykube(monkeypatch, sent_authorization='Bearer exec-token', from_file={
        'cluster': {'server': 'https://k8s.example'},
        'user': {'exec': {'command': 'aws'}},
    })
    info = login_via_pykube(logger=LOGGER)
    assert info is not None
    assert (info.scheme, info.token) == ('Bearer', 'exec-token')


def test_pykube_without_any_config_gives_nothing(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_pykube(monkeypatch)
    monkeypatch.setenv('KUBECONFIG', '/nowhere/config')
    assert login_via_pykube(logger=LOGGER) is None
    assert caplog.messages == ["Pykube is configured neither in cluster, nor via kubeconfig file "
                               "(KUBECONFIG=/nowhere/config): Configuration file ~/.kube/config not found"]


def test_pykube_not_installed_fails_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'pykube', None)
    with pytest.raises(kopf.LoginError, match="'pykube-ng' library is not installed"):
        login_via_pykube(logger=LOGGER)


def test_client_in_cluster(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_kubernetes(monkeypatch, in_cluster={
        'host': 'https://10.96.0.1:443', 'ssl_ca_cert': '/var/run/ca.crt',
        'api_key': {'authorization': 'bearer sa-token'},
    })
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = login_via_client(logger=LOGGER)
    assert info is not None
    assert (info.server, info.ca_path, info.scheme, info.token) == (
        'https://10.96.0.1:443', '/var/run/ca.crt', 'Bearer', 'sa-token')
    assert caplog.messages == ['Client is configured in cluster with service account.']


def test_client_via_kubeconfig(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_kubernetes(monkeypatch, namespace='team-a', from_file={
        'host': 'https://k8s.example', 'verify_ssl': False,
        'cert_file': '/tmp/cert', 'key_file': '/tmp/key',
        'api_key': {'authorization': 'Bearer oidc-token'},
    })
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = login_via_client(logger=LOGGER)
    assert info == kopf.ConnectionInfo(
        server='https://k8s.example', insecure=True,
        certificate_path='/tmp/cert', private_key_path='/tmp/key',
        scheme='Bearer', token='oidc-token', default_namespace='team-a', priority=10,
    )
    assert caplog.messages == ['Client is configured via kubeconfig file.']


def test_client_token_with_a_separate_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_kubernetes(monkeypatch, from_file={
        'host': 'https://k8s.example',
        'api_key': {'authorization': 'xyz'}, 'api_key_prefix': {'authorization': 'Token'},
    })
    info = login_via_client(logger=LOGGER)
    assert info is not None
    assert (info.scheme, info.token) == ('Token', 'xyz')


def test_client_token_of_the_newer_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_kubernetes(monkeypatch, from_file={
        'host': 'https://k8s.example', 'api_key': {'BearerToken': 'Bearer exec-token'},
    })
    info = login_via_client(logger=LOGGER)
    assert info is not None
    assert (info.scheme, info.token) == ('Bearer', 'exec-token')


def test_client_without_any_config_gives_nothing(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_kubernetes(monkeypatch)
    monkeypatch.delenv('KUBECONFIG', raising=False)
    assert login_via_client(logger=LOGGER) is None
    assert caplog.messages == ["Client is configured neither in cluster, nor via kubeconfig file "
                               "(KUBECONFIG=~/.kube/config): Invalid kube-config file. No configuration found."]


def test_client_not_installed_fails_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'kubernetes', None)
    with pytest.raises(kopf.LoginError, match="'kubernetes' library is not installed"):
        login_via_client(logger=LOGGER)


async def test_async_client_without_any_config_gives_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_kubernetes(monkeypatch, module='kubernetes_asyncio')
    assert await login_via_async_client(logger=LOGGER) is None


async def test_async_client_not_installed_fails_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'kubernetes_asyncio', None)
    with pytest.raises(kopf.LoginError, match="'kubernetes_asyncio' library is not installed"):
        await login_via_async_client(logger=LOGGER)


def test_the_lazy_public_names_resolve_to_the_client() -> None:
    import aiohttp
    assert kopf.login_via_async_client is login_via_async_client
    assert kopf.AiohttpSession is aiohttp.ClientSession
    assert {'login_via_async_client', 'AiohttpSession'} <= set(dir(kopf))
