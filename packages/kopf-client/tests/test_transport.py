"""
Credentials of the requests: taken from the vault per attempt, invalidated on 401.

The vault is the real one from kopf-core; the re-login that the framework
would do is imitated by the tests populating or failing the vault.
"""
from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from typing import TYPE_CHECKING, List

import pytest

import kopf
from kopf import clients
from kopf_client import AiohttpClient

if TYPE_CHECKING:
    from conftest import FakeApi

PODS = kopf.Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
POD_PATH = '/api/v1/namespaces/ns/pods/pod1'
POD = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'pod1'}}
UNAUTHORIZED = {'kind': 'Status', 'code': 401, 'reason': 'Unauthorized', 'message': 'Unauthorized'}


async def test_requests_carry_the_token_of_the_credentials(api: FakeApi, client: AiohttpClient) -> None:
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert api.requests[0].headers['Authorization'] == 'Bearer main-token'


async def test_unauthorized_credentials_are_invalidated_and_others_are_used(
        api: FakeApi, client: AiohttpClient, vault: clients.Vault, sleeps: List[float],
) -> None:
    await vault.populate({'spare': kopf.ConnectionInfo(server=api.url, token='spare-token', priority=-1)})
    api.add(POD_PATH, UNAUTHORIZED, status=401)
    api.add(POD_PATH, POD)
    body = await client.get_object(PODS, namespace='ns', name='pod1')
    assert body == POD
    assert [request.headers['Authorization'] for request in api.requests] == [
        'Bearer main-token',
        'Bearer spare-token',
    ]
    assert sleeps == []  # not a retry of a temporary error: no back-off


async def test_unauthorized_credentials_are_never_used_again(
        api: FakeApi, client: AiohttpClient, vault: clients.Vault,
) -> None:
    main_info = kopf.ConnectionInfo(server=api.url, token='main-token')
    await vault.populate({'spare': kopf.ConnectionInfo(server=api.url, token='spare-token', priority=-1)})
    api.add(POD_PATH, UNAUTHORIZED, status=401)
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    await vault.populate({'main': main_info})  # a re-login returning the same stale token
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert api.requests[-1].headers['Authorization'] == 'Bearer spare-token'


async def test_depleted_vault_makes_requests_wait_for_relogin(
        api: FakeApi, client: AiohttpClient, vault: clients.Vault,
) -> None:
    api.add(POD_PATH, UNAUTHORIZED, status=401)
    api.add(POD_PATH, POD)
    request = asyncio.create_task(client.get_object(PODS, namespace='ns', name='pod1'))
    await asyncio.wait_for(vault.wait_for_emptiness(), timeout=1)
    await asyncio.sleep(0)  # let the request reach the waiting
    assert not request.done()
    await vault.populate({'main': kopf.ConnectionInfo(server=api.url, token='fresh-token')})
    body = await asyncio.wait_for(request, timeout=1)
    assert body == POD
    assert api.requests[-1].headers['Authorization'] == 'Bearer fresh-token'


async def test_depleted_vault_fails_the_requests_when_relogin_fails(
        api: FakeApi, client: AiohttpClient, vault: clients.Vault,
) -> None:
    api.add(POD_PATH, UNAUTHORIZED, status=401)
    request = asyncio.create_task(client.get_object(PODS, namespace='ns', name='pod1'))
    await asyncio.wait_for(vault.wait_for_emptiness(), timeout=1)
    await vault.fail(RuntimeError("no credentials were retrieved"))
    with pytest.raises(kopf.LoginError, match='no credentials were retrieved'):
        await asyncio.wait_for(request, timeout=1)


async def test_credentials_with_unusable_tls_files_are_invalidated_and_others_are_used(
        api: FakeApi, client: AiohttpClient, vault: clients.Vault, tmp_path: pathlib.Path,
) -> None:
    broken = kopf.ConnectionInfo(server=api.url, token='broken-token', ca_path=str(tmp_path / 'absent.crt'))
    await vault.populate({'broken': dataclasses.replace(broken, priority=1)})
    api.add(POD_PATH, POD)
    body = await client.get_object(PODS, namespace='ns', name='pod1')
    assert body == POD
    assert [request.headers['Authorization'] for request in api.requests] == ['Bearer main-token']


async def test_session_is_reused_for_the_same_credentials(api: FakeApi, client: AiohttpClient) -> None:
    api.add(POD_PATH, POD)
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert len(client._transport.sessions) == 1


async def test_session_of_invalidated_credentials_is_closed(
        api: FakeApi, client: AiohttpClient, vault: clients.Vault,
) -> None:
    await vault.populate({'spare': kopf.ConnectionInfo(server=api.url, token='spare-token', priority=-1)})
    api.add(POD_PATH, UNAUTHORIZED, status=401)
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert len(client._transport.sessions) == 1  # only the spare one


async def test_session_of_replaced_credentials_is_closed(
        api: FakeApi, client: AiohttpClient, vault: clients.Vault,
) -> None:
    api.add(POD_PATH, POD)
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    await vault.populate({'main': kopf.ConnectionInfo(server=api.url, token='rotated-token')})
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert len(client._transport.sessions) == 1
    assert api.requests[-1].headers['Authorization'] == 'Bearer rotated-token'


async def test_closed_client_refuses_requests(client: AiohttpClient) -> None:
    await client.close()
    with pytest.raises(RuntimeError, match='closed'):
        await client.get_object(PODS, namespace='ns', name='pod1')
