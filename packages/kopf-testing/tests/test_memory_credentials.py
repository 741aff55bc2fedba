"""
The in-memory client and the vault, as kopf-client does: no request without credentials.

The driver gives its clients the operator's vault: a request waits while the vault
is empty (e.g. before the login, or while re-logging in), fails with
``kopf.LoginError`` if the login found nothing, and nothing is requested after close().
"""
import asyncio
from typing import Any

import pytest

import kopf
from kopf import clients
from kopf_testing import crd_manifest
from kopf_testing.memory import MemoryApi, MemoryClient, MemoryDriver, MemoryKube


@pytest.fixture
def api() -> MemoryApi:
    api = MemoryApi()
    MemoryKube(api).apply_crd(crd_manifest('vaults.kopf.dev', 'widgets', 'Widget'))
    return api


def make_client(api: MemoryApi, vault: clients.Vault) -> Any:
    return MemoryDriver(api).create_client(vault=vault, settings=kopf.OperatorSettings())


async def test_requests_wait_for_the_credentials(api: MemoryApi) -> None:
    vault = clients.Vault()
    client = make_client(api, vault)
    listing = asyncio.create_task(client.list_objects(api.served_by_name('widgets').resource, namespace=None))
    await asyncio.sleep(0.05)
    assert not listing.done()
    await vault.populate({'memory': kopf.ConnectionInfo(server='memory://kopf-testing')})
    page = await asyncio.wait_for(listing, timeout=1)
    assert page.items == []


async def test_requests_fail_when_the_login_found_nothing(api: MemoryApi) -> None:
    vault = clients.Vault()
    await vault.fail(kopf.LoginError("No credentials were retrieved."))
    client = make_client(api, vault)
    with pytest.raises(kopf.LoginError, match=r"No credentials were retrieved\."):
        await client.scan_resources()


async def test_no_requests_after_closing(api: MemoryApi) -> None:
    client = MemoryClient(api)
    await client.close()
    with pytest.raises(RuntimeError, match="The API client is closed"):
        await client.scan_resources()
