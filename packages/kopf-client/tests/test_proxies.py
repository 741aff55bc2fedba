"""
``settings.networking.trust_env``: the proxy variables apply only when it is true.

Two fake servers: the API and a "proxy" that answers the same paths; which one
receives the request shows whether the client went through the proxy.
"""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

import kopf
from kopf import clients
from kopf_client import AiohttpClient
from kopf_client._proxies import ProxyError, check_proxy_url

if TYPE_CHECKING:
    from conftest import ApiFactory, FakeApi

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


# ConnectionInfo.proxy_url (also from the kubeconfig's proxy-url): explicit, so it wins over the variables.

@pytest.mark.parametrize('trust_env', [False, True])
async def test_proxy_url_is_used_and_wins_over_the_proxy_variables(
        api_factory: ApiFactory, monkeypatch: pytest.MonkeyPatch, trust_env: bool,
) -> None:
    api, proxy, env_proxy = await api_factory(), await api_factory(), await api_factory()
    proxy.add(POD_PATH, POD)
    monkeypatch.setenv('HTTP_PROXY', env_proxy.url)
    settings = kopf.OperatorSettings()
    settings.networking.trust_env = trust_env
    info = kopf.ConnectionInfo(server=api.url, token='token', proxy_url=proxy.url)
    async with AiohttpClient(vault=clients.Vault({'main': info}), settings=settings) as client:
        assert await client.get_object(PODS, namespace='ns', name='pod1') == POD
    assert (len(proxy.requests), len(api.requests), len(env_proxy.requests)) == (1, 0, 0)
    assert proxy.requests[0].headers['Authorization'] == 'Bearer token'


def test_socks5_without_its_package_is_refused_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'aiohttp_socks', None)  # not importable, even if installed
    with pytest.raises(ProxyError) as err:
        check_proxy_url('socks5://user:secret@proxy.local:1080')
    assert str(err.value) == ("The proxy_url 'socks5://user:<hidden>@proxy.local:1080' is a SOCKS proxy, which needs "
                              "the 'aiohttp-socks' package: pip install aiohttp-socks")


@pytest.mark.parametrize('url', ['ftp://proxy.local', 'proxy.local:3128', 'http://'])
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(ProxyError, match="is not a proxy URL that can be used: use http://, https:// or socks5://"):
        check_proxy_url(url)


async def test_unusable_proxy_url_of_a_login_handler_fails_its_credentials(
        api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    api.add(POD_PATH, POD)
    vault = clients.Vault({'bad': kopf.ConnectionInfo(server=api.url, proxy_url='ftp://proxy.local', priority=1),
                           'good': kopf.ConnectionInfo(server=api.url)})
    async with AiohttpClient(vault=vault, settings=kopf.OperatorSettings()) as client:
        assert await client.get_object(PODS, namespace='ns', name='pod1') == POD
    assert (await vault.select())[0] == 'good'


def test_the_proxys_password_is_hidden_in_the_reprs() -> None:
    info = kopf.ConnectionInfo(server='https://k8s', proxy_url='http://user:secret@proxy.local:3128')
    assert 'secret' not in repr(info)
    assert "proxy_url='http://user:<hidden>@proxy.local:3128'" in repr(info)


async def test_socks5_goes_through_the_connector_of_aiohttp_socks(
        api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    # aiohttp-socks is optional and not installed here: a stand-in records how it is asked for the connector.
    asked: list[tuple[str, dict[str, object]]] = []

    class ProxyConnector(aiohttp.TCPConnector):
        @classmethod
        def from_url(cls, url: str, **kwargs: Any) -> ProxyConnector:
            asked.append((url, kwargs))
            return cls(**kwargs)  # connects directly: what matters here is that this connector is used

    monkeypatch.setitem(sys.modules, 'aiohttp_socks', types.SimpleNamespace(ProxyConnector=ProxyConnector))
    api.add(POD_PATH, POD)
    info = kopf.ConnectionInfo(server=api.url, proxy_url='socks5://proxy.local:1080')
    async with AiohttpClient(vault=clients.Vault({'main': info}), settings=kopf.OperatorSettings()) as client:
        assert await client.get_object(PODS, namespace='ns', name='pod1') == POD
    assert [url for url, _ in asked] == ['socks5://proxy.local:1080']
    assert asked[0][1]['limit'] == 0 and 'ssl' in asked[0][1]  # the same pool and TLS as without a proxy
