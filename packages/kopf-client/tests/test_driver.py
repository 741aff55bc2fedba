"""
The driver: what the framework gets via the ``kopf.clients`` entry point.
"""
from __future__ import annotations

import importlib.machinery
import importlib.metadata
import sys
import types

import pytest

import kopf
from kopf import clients
from kopf_client import (
    AiohttpClient,
    driver,
    login_via_async_client,
    login_via_client,
    login_via_pykube,
    login_with_kubeconfig,
    login_with_service_account,
)


def _install_fake(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    monkeypatch.setitem(sys.modules, name, module)


def test_driver_is_registered_as_an_entry_point() -> None:
    entry_points = importlib.metadata.entry_points(group='kopf.clients')
    loaded = [entry_point.load() for entry_point in entry_points if entry_point.name == 'aiohttp']
    assert loaded == [driver]


async def test_driver_creates_aiohttp_clients() -> None:
    as_protocol: clients.ClientDriver = driver  # conformance to the protocol, checked by mypy
    client = as_protocol.create_client(vault=clients.Vault(), settings=kopf.OperatorSettings())
    assert isinstance(client, AiohttpClient)
    await client.close()


@pytest.mark.parametrize('installed, expected', [
    pytest.param([], [login_with_service_account, login_with_kubeconfig], id='none'),
    pytest.param(['pykube', 'kubernetes', 'kubernetes_asyncio'], [login_via_pykube, login_via_client], id='all'),
    pytest.param(['pykube', 'kubernetes'], [login_via_pykube, login_via_client], id='pykube-and-client'),
    pytest.param(['kubernetes'], [login_via_client], id='client'),
    pytest.param(['kubernetes_asyncio'], [login_via_async_client], id='async-client'),
    pytest.param(['pykube', 'kubernetes_asyncio'], [login_via_pykube, login_via_async_client], id='pykube-and-async'),
    pytest.param(['pykube'], [login_via_pykube], id='pykube'),
])
def test_default_logins_are_those_of_kopf(
        monkeypatch: pytest.MonkeyPatch, installed: list[str], expected: list[object]) -> None:
    # The libraries, when installed, replace the built-in logins; the sync client wins over the async one.
    for name in ['pykube', 'kubernetes', 'kubernetes_asyncio']:
        if name in installed:
            _install_fake(monkeypatch, name)
        else:
            monkeypatch.setitem(sys.modules, name, None)
    assert list(driver.default_login_fns()) == expected
