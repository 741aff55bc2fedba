"""
A login handler's own aiohttp session (``kopf.AiohttpSession``), as in Kopf.

The requests go through the user's session (its headers, its connector) to a
real local server, with the client's retries on top; the operator owns the
session from then on: it closes it when retired or at the end, but not while
other credentials in use still carry it.
"""
from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, List

import aiohttp
import pytest

import kopf
from kopf import clients
from kopf_client import AiohttpClient, AiohttpSession

if TYPE_CHECKING:
    from conftest import FakeApi

PODS = kopf.Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
POD_PATH = '/api/v1/namespaces/ns/pods/pod1'
POD = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'pod1'}}


async def make_client(vault: clients.Vault, settings: kopf.OperatorSettings, sleeps: List[float]) -> AiohttpClient:
    async def sleep(delay: float) -> None:
        sleeps.append(delay)
    return AiohttpClient(vault=vault, settings=settings, sleep=sleep)


async def test_is_the_public_name_and_carries_kopfs_fields() -> None:
    async with aiohttp.ClientSession() as session:
        info = kopf.AiohttpSession(aiohttp_session=session, server='https://k8s', default_namespace='ns',
                                   priority=5, expiration=datetime.datetime(2099, 1, 1))
    assert kopf.AiohttpSession is AiohttpSession
    assert isinstance(info, kopf.ConnectionInfo)  # so that the vault carries it as it carries credentials
    assert (info.server, info.default_namespace, info.priority) == ('https://k8s', 'ns', 5)
    assert 'aiohttp_session=<aiohttp' in repr(info)


async def test_settings_of_the_session_itself_are_refused_not_ignored() -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(TypeError, match=r"so token, proxy_url would be ignored: set them up in the aiohttp"):
            AiohttpSession(aiohttp_session=session, server='https://k8s', token='t', proxy_url='http://p')


def test_a_non_session_is_refused() -> None:
    with pytest.raises(TypeError, match=r"needs an aiohttp\.ClientSession as aiohttp_session, not str"):
        AiohttpSession(aiohttp_session='session', server='https://k8s')  # type: ignore[arg-type]


async def test_requests_go_through_the_users_session_with_the_clients_retries(
        api: FakeApi, settings: kopf.OperatorSettings) -> None:
    settings.networking.error_backoffs = [1, 1]
    api.add(POD_PATH, status=503)
    api.add(POD_PATH, POD)
    session = aiohttp.ClientSession(headers={'X-Marker': 'mine', 'Authorization': 'Custom xyz'})
    vault = clients.Vault({'own': AiohttpSession(aiohttp_session=session, server=api.url)})
    sleeps: List[float] = []
    async with await make_client(vault, settings, sleeps) as client:
        assert await client.get_object(PODS, namespace='ns', name='pod1') == POD
    assert sleeps == [1]  # retried by the client, on top of the user's session
    assert [r.headers['X-Marker'] for r in api.requests] == ['mine', 'mine']
    assert [r.headers['Authorization'] for r in api.requests] == ['Custom xyz', 'Custom xyz']
    assert api.requests[0].headers['User-Agent'].startswith('kopf-client/')  # added, as Kopf does
    assert session.closed  # owned by the operator from then on: closed with the client


async def test_the_users_own_user_agent_stays(api: FakeApi, settings: kopf.OperatorSettings) -> None:
    api.add(POD_PATH, POD)
    session = aiohttp.ClientSession(headers={'User-Agent': 'myoperator/1.0'})
    vault = clients.Vault({'own': AiohttpSession(aiohttp_session=session, server=api.url)})
    async with await make_client(vault, settings, []) as client:
        await client.get_object(PODS, namespace='ns', name='pod1')
    assert api.requests[0].headers['User-Agent'] == 'myoperator/1.0'


async def test_a_rejected_session_is_closed_and_the_next_credentials_are_used(
        api: FakeApi, settings: kopf.OperatorSettings) -> None:
    api.add(POD_PATH, status=401)
    api.add(POD_PATH, POD)
    session = aiohttp.ClientSession()
    vault = clients.Vault({'own': AiohttpSession(aiohttp_session=session, server=api.url, priority=10),
                           'plain': kopf.ConnectionInfo(server=api.url, token='plain')})
    async with await make_client(vault, settings, []) as client:
        assert await client.get_object(PODS, namespace='ns', name='pod1') == POD
        assert session.closed  # retired as Kopf does on invalidation, while the client goes on
    assert api.requests[1].headers['Authorization'] == 'Bearer plain'


async def test_the_same_session_with_new_credentials_is_not_closed(
        api: FakeApi, settings: kopf.OperatorSettings) -> None:
    api.add(POD_PATH, POD)
    api.add(POD_PATH, POD)
    session = aiohttp.ClientSession()
    later = datetime.datetime(2099, 1, 1)
    vault = clients.Vault({'own': AiohttpSession(aiohttp_session=session, server=api.url)})
    async with await make_client(vault, settings, []) as client:
        await client.get_object(PODS, namespace='ns', name='pod1')
        # A re-login returns the same session with a new expiration (e.g. a session kept in the memo).
        await vault.populate({'own': AiohttpSession(aiohttp_session=session, server=api.url, expiration=later)})
        await client.get_object(PODS, namespace='ns', name='pod1')
        open_while_used = not session.closed
    # Read apart from the assertion: mypy would narrow session.closed to False after it.
    closed_at_the_end = session.closed
    assert open_while_used
    assert closed_at_the_end
    assert len(api.requests) == 2


async def test_a_session_closed_by_its_owner_invalidates_its_credentials(
        api: FakeApi, settings: kopf.OperatorSettings) -> None:
    api.add(POD_PATH, POD)
    session = aiohttp.ClientSession()
    await session.close()
    vault = clients.Vault({'own': AiohttpSession(aiohttp_session=session, server=api.url, priority=10),
                           'plain': kopf.ConnectionInfo(server=api.url, token='plain')})
    async with await make_client(vault, settings, []) as client:
        assert await client.get_object(PODS, namespace='ns', name='pod1') == POD
    key, _ = await vault.select()
    assert key == 'plain'
