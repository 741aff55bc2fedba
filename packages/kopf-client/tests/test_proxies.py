"""
``settings.networking.trust_env``: the proxy variables apply only when it is true.

Two fake servers: the API and a "proxy" that answers the same paths; which one
receives the request shows whether the client went through the proxy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import kopf
from kopf import clients
from kopf_client import AiohttpClient

if TYPE_CHECKING:
    from conftest import ApiFactory

PODS = kopf.Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
POD_PATH = '/api/v1/namespaces/ns/pods/pod1'
POD = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'pod1'}}


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY']:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.mark.parametrize('via_settings, via_credentials, proxied', [
    pytest.param(False, False, False, id='direct-by-default'),
    pytest.param(True, False, True, id='settings'),
    pytest.param(False, True, True, id='credentials'),
])
async def test_proxy_variables_are_used_only_when_trusted(
        api_factory: ApiFactory, monkeypatch: pytest.MonkeyPatch,
        via_settings: bool, via_credentials: bool, proxied: bool,
) -> None:
    api, proxy = await api_factory(), await api_factory()
    api.add(POD_PATH, POD)
    proxy.add(POD_PATH, POD)
    monkeypatch.setenv('HTTP_PROXY', proxy.url)
    settings = kopf.OperatorSettings()
    settings.networking.trust_env = via_settings
    info = kopf.ConnectionInfo(server=api.url, token='token', trust_env=via_credentials)
    async with AiohttpClient(vault=clients.Vault({'main': info}), settings=settings) as client:
        assert await client.get_object(PODS, namespace='ns', name='pod1') == POD
    assert (len(proxy.requests), len(api.requests)) == ((1, 0) if proxied else (0, 1))
