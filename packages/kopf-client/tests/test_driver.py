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


def test_default_logins_without_other_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'pykube', None)
    monkeypatch.setitem(sys.modules, 'kubernetes', None)
    assert list(driver.default_login_fns()) == [login_with_service_account, login_with_kubeconfig]


def test_default_logins_piggyback_the_installed_libraries_first(monkeypatch: pytest.MonkeyPatch) -> None:
    _install_fake(monkeypatch, 'pykube')
    _install_fake(monkeypatch, 'kubernetes')
    assert list(driver.default_login_fns()) == [
        login_via_pykube, login_via_client, login_with_service_account, login_with_kubeconfig,
    ]


def test_default_logins_piggyback_only_the_installed_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'pykube', None)
    _install_fake(monkeypatch, 'kubernetes')
    assert list(driver.default_login_fns()) == [login_via_client, login_with_service_account, login_with_kubeconfig]
