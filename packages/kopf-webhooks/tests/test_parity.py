"""
The constructors of the servers & tunnels accept what Kopf 1.45.2's accept, with the same defaults.

The expected parameters are those of Kopf 1.45.2's classes (keyword-only, in
this order); each is stored as an attribute of the same name, as Kopf does.
What each does is checked by the other tests (``test_servers.py``,
``test_tunnels.py``, ``test_clusters.py``).
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, Type

import pytest

import kopf
from kopf_webhooks import (
    WebhookAutoServer,
    WebhookAutoTunnel,
    WebhookDockerDesktopServer,
    WebhookK3dServer,
    WebhookMinikubeServer,
    WebhookNgrokTunnel,
    WebhookServer,
)

_SERVER: Dict[str, Any] = {
    'addr': None, 'port': None, 'path': None, 'host': None,
    'cadata': None, 'cafile': None, 'cadump': None,
    'context': None,
    'insecure': False, 'certfile': None, 'pkeyfile': None, 'password': None,
    'extra_sans': (),
    'verify_mode': None, 'verify_cafile': None, 'verify_capath': None, 'verify_cadata': None,
    'file_check_interval': 60.0,
}
_NGROK: Dict[str, Any] = {'addr': None, 'port': None, 'path': None, 'token': None, 'region': None, 'binary': None}
_AUTO_TUNNEL: Dict[str, Any] = {'addr': None, 'port': None, 'path': None}

KOPF_1_45_2 = {
    WebhookServer: _SERVER,
    WebhookK3dServer: _SERVER,
    WebhookMinikubeServer: _SERVER,
    WebhookDockerDesktopServer: _SERVER,
    WebhookAutoServer: _SERVER,
    WebhookNgrokTunnel: _NGROK,
    WebhookAutoTunnel: _AUTO_TUNNEL,
}

SAMPLE_VALUES: Dict[str, Any] = {
    'addr': '127.0.0.1', 'port': 12345, 'path': '/xyz', 'host': 'example.com',
    'cadata': b'ca', 'cafile': '/ca.pem', 'cadump': '/dump.pem',
    'certfile': '/cert.pem', 'pkeyfile': '/pkey.pem', 'password': 'secret', 'extra_sans': ['x.example.com'],
    'verify_cafile': '/client-ca.pem', 'verify_capath': '/cas', 'verify_cadata': 'client-ca',
    'file_check_interval': 5.0, 'token': 'tkn', 'region': 'eu', 'binary': '/bin/ngrok',
}


@pytest.mark.parametrize('cls', list(KOPF_1_45_2), ids=lambda cls: cls.__name__)
def test_constructor_parameters_and_defaults_are_kopfs(cls: Type[Any]) -> None:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # without self
    assert {p.name: p.default for p in parameters} == KOPF_1_45_2[cls]
    assert [p.name for p in parameters] == list(KOPF_1_45_2[cls])
    assert all(p.kind == inspect.Parameter.KEYWORD_ONLY for p in parameters)


@pytest.mark.parametrize('cls', list(KOPF_1_45_2), ids=lambda cls: cls.__name__)
def test_constructor_parameters_are_kept_as_attributes(cls: Type[Any]) -> None:
    kwargs = {name: SAMPLE_VALUES[name] for name in KOPF_1_45_2[cls] if name in SAMPLE_VALUES}
    instance = cls(**kwargs)
    assert {name: getattr(instance, name) for name in KOPF_1_45_2[cls]} == {**KOPF_1_45_2[cls], **kwargs}


@pytest.mark.parametrize('cls', list(KOPF_1_45_2), ids=lambda cls: cls.__name__)
def test_classes_are_kopfs_names(cls: Type[Any]) -> None:
    assert getattr(kopf, cls.__name__) is cls


@pytest.mark.parametrize('cls, host', [
    (WebhookServer, None),
    (WebhookK3dServer, 'host.k3d.internal'),
    (WebhookMinikubeServer, 'host.minikube.internal'),
    (WebhookDockerDesktopServer, 'host.docker.internal'),
])
def test_default_hosts_are_kopfs(cls: Type[WebhookServer], host: str) -> None:
    assert cls.DEFAULT_HOST == host
