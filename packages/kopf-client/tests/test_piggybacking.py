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
import pathlib
import sys
import types
from typing import Any, Dict, Optional

import pytest

import kopf
from kopf_client import login_via_async_client, login_via_client, login_via_pykube

LOGGER = logging.getLogger('test.login')


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """The kubeconfig's raw values are checked in the files: never the developer's own ones."""
    home = tmp_path / 'home'
    home.mkdir()
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.delenv('KUBECONFIG', raising=False)
    return home


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
        sent: Optional[list[Any]] = None,
) -> None:
    requests: list[Any] = sent if sent is not None else []

    class PyKubeError(Exception):
        pass

    class KubeConfig:
        def __init__(self, doc: Dict[str, Any]) -> None:
            self.cluster = doc['cluster']
            self.user = doc['user']
            self.namespace = doc.get('namespace', 'default')
            self.current_context = doc.get('context', 'dev')
            self.contexts = {self.current_context: {'cluster': doc.get('cluster_name', 'dev')}}
            self.kubeconfig_file = doc.get('kubeconfig_file')  # None in a cluster

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
            requests.append(self.config)
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
    assert caplog.messages[0] == 'Pykube is configured via kubeconfig file.'
    assert caplog.messages[1].startswith("TLS verification is off for https://k8s.example ")
    assert len(caplog.messages) == 2


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
    with caplog.at_level(logging.DEBUG):
        assert login_via_pykube(logger=LOGGER) is None
    assert {r.levelname for r in caplog.records} == {'DEBUG'}  # the login error says it, once
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
    assert caplog.messages[0] == 'Client is configured via kubeconfig file.'
    assert caplog.messages[1].startswith("TLS verification is off for https://k8s.example: ")
    assert len(caplog.messages) == 2


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
    with caplog.at_level(logging.DEBUG):
        assert login_via_client(logger=LOGGER) is None
    assert {r.levelname for r in caplog.records} == {'DEBUG'}  # the login error says it, once
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


# The kubeconfig's booleans as kubectl reads them (issue 27 §2). The libraries take them loosely:
# pykube keeps the raw value (and skips the verification if it is truthy, e.g. "false"), the official
# client keeps only `verify_ssl = not value` (False for "false"): the raw values are checked here.

def _raw_kubeconfig(path: pathlib.Path, *, insecure: str, ca: bool = False) -> pathlib.Path:
    ca_line = '    certificate-authority-data: Q0E=\n' if ca else ''
    path.write_text(
        'apiVersion: v1\nkind: Config\ncurrent-context: dev\n'
        'clusters:\n- name: dev-cluster\n  cluster:\n    server: https://k8s.example\n'
        f'    insecure-skip-tls-verify: {insecure}\n{ca_line}'
        'users:\n- name: dev-user\n  user:\n    token: xyz\n'
        'contexts:\n- name: dev\n  context:\n    cluster: dev-cluster\n    user: dev-user\n')
    return path


@pytest.mark.parametrize('value', ['false', 'true', '0'])
def test_pykube_with_a_non_boolean_insecure_flag_fails_before_any_request(
        monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    sent: list[Any] = []
    _fake_pykube(monkeypatch, sent=sent, sent_authorization='Bearer exec-token', from_file={
        'cluster': {'server': 'https://k8s.example', 'insecure-skip-tls-verify': value},
        'user': {'exec': {'command': 'aws'}},
        'context': 'dev', 'cluster_name': 'dev-cluster', 'kubeconfig_file': '/home/me/.kube/config',
    })
    with pytest.raises(kopf.LoginError) as err:
        login_via_pykube(logger=LOGGER)
    assert isinstance(err.value, kopf.PermanentError)  # one log line, no traceback, no retries
    assert str(err.value).startswith(
        f"The kubeconfig's insecure-skip-tls-verify must be a YAML boolean, but it is the string {value!r} "
        f"in the cluster 'dev-cluster' of the context 'dev' in /home/me/.kube/config; kubectl refuses it too.")
    assert not sent  # the exec plugin's token has not gone over an unverified connection


def test_pykube_with_insecure_flag_and_a_ca_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pykube(monkeypatch, from_file={
        'cluster': {'server': 'https://k8s.example', 'insecure-skip-tls-verify': True,
                    'certificate-authority': _Bytes(b'CA')},
        'user': {'token': 'xyz'},
    })
    with pytest.raises(kopf.LoginError, match="both insecure-skip-tls-verify: true and certificate-authority in "
                                              "the cluster 'dev' of the context 'dev'; kubectl refuses it too"):
        login_via_pykube(logger=LOGGER)


def test_pykube_insecure_flag_is_warned_about_with_the_context_and_file(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _fake_pykube(monkeypatch, from_file={
        'cluster': {'server': 'https://k8s.example', 'insecure-skip-tls-verify': True},
        'user': {'token': 'xyz'},
        'context': 'dev', 'cluster_name': 'dev-cluster', 'kubeconfig_file': '/home/me/.kube/config',
    })
    with caplog.at_level(logging.WARNING, logger='test.login'):
        login_via_pykube(logger=LOGGER)
    assert len(caplog.records) == 1
    assert caplog.records[0].levelno == logging.WARNING
    assert caplog.messages[0].startswith(
        "TLS verification is off for https://k8s.example (the cluster 'dev-cluster' of the context 'dev' "
        "in /home/me/.kube/config): the server's certificate is not checked")


@pytest.mark.parametrize('value', ['"false"', "'true'", '0'])
def test_client_with_a_non_boolean_insecure_flag_in_the_file_fails(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, value: str) -> None:
    path = _raw_kubeconfig(tmp_path / 'config', insecure=value)
    monkeypatch.setenv('KUBECONFIG', str(path))
    # As the official client loads it: `verify_ssl = not "false"`, i.e. insecure.
    _fake_kubernetes(monkeypatch, from_file={'host': 'https://k8s.example', 'verify_ssl': False,
                                             'api_key': {'authorization': 'Bearer xyz'}})
    with pytest.raises(kopf.LoginError) as err:
        login_via_client(logger=LOGGER)
    assert isinstance(err.value, kopf.PermanentError)
    assert "The kubeconfig's insecure-skip-tls-verify must be a YAML boolean, but it is " in str(err.value)
    assert f"in the cluster 'dev-cluster' of the context 'dev' in {path}; kubectl refuses it too." in str(err.value)


def test_client_with_insecure_flag_and_a_ca_in_the_file_fails(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv('KUBECONFIG', str(_raw_kubeconfig(tmp_path / 'config', insecure='true', ca=True)))
    _fake_kubernetes(monkeypatch, from_file={'host': 'https://k8s.example', 'verify_ssl': False,
                                             'ssl_ca_cert': '/tmp/ca', 'api_key': {'authorization': 'Bearer xyz'}})
    with pytest.raises(kopf.LoginError, match="both insecure-skip-tls-verify: true and certificate-authority-data"):
        login_via_client(logger=LOGGER)


def test_client_insecure_flag_is_warned_about_with_the_context_and_file(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _raw_kubeconfig(tmp_path / 'config', insecure='true')
    monkeypatch.setenv('KUBECONFIG', str(path))
    _fake_kubernetes(monkeypatch, from_file={'host': 'https://k8s.example', 'verify_ssl': False,
                                             'api_key': {'authorization': 'Bearer xyz'}})
    with caplog.at_level(logging.WARNING, logger='test.login'):
        info = login_via_client(logger=LOGGER)
    assert info is not None and info.insecure is True
    assert len(caplog.records) == 1
    assert caplog.messages[0].startswith(
        f"TLS verification is off for https://k8s.example (the cluster 'dev-cluster' of the context 'dev' "
        f"in {path}): the server's certificate is not checked")


def test_client_secure_file_is_not_warned_about(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv('KUBECONFIG', str(_raw_kubeconfig(tmp_path / 'config', insecure='false')))
    _fake_kubernetes(monkeypatch, from_file={'host': 'https://k8s.example', 'verify_ssl': True,
                                             'api_key': {'authorization': 'Bearer xyz'}})
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = login_via_client(logger=LOGGER)
    assert info is not None and info.insecure is False
    assert caplog.messages == ['Client is configured via kubeconfig file.']


async def test_async_client_with_a_non_boolean_insecure_flag_in_the_file_fails(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    path = _raw_kubeconfig(tmp_path / 'config', insecure='"false"')
    monkeypatch.setenv('KUBECONFIG', str(path))
    _fake_kubernetes(monkeypatch, module='kubernetes_asyncio', from_file={
        'host': 'https://k8s.example', 'verify_ssl': False, 'api_key': {'authorization': 'Bearer xyz'}})
    with pytest.raises(kopf.LoginError, match="it is the string 'false' in the cluster 'dev-cluster'"):
        await login_via_async_client(logger=LOGGER)


def test_the_lazy_public_names_resolve_to_the_client() -> None:
    import kopf_client
    assert kopf.login_via_async_client is login_via_async_client
    assert kopf.AiohttpSession is kopf_client.AiohttpSession
    assert {'login_via_async_client', 'AiohttpSession'} <= set(dir(kopf))
