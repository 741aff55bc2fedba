"""
The sessions' authentication headers and their lifecycle in the pool.

The headers are checked as a real server receives them; the pool is checked
by its sessions' ``closed`` flags, not by how it stores them.
"""
from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import pytest

import kopf
from kopf import clients
from kopf_client._sessions import SessionPool

if TYPE_CHECKING:
    from conftest import FakeApi

KEY = clients.VaultKey('key')


@pytest.mark.parametrize('info, expected', [
    pytest.param(kopf.ConnectionInfo(server='', token='xyz'), 'Bearer xyz', id='bearer-by-default'),
    pytest.param(kopf.ConnectionInfo(server='', scheme='Bearer', token='xyz'), 'Bearer xyz', id='bearer'),
    pytest.param(kopf.ConnectionInfo(server='', scheme='Digest', token='xyz'), 'Digest xyz', id='other-scheme'),
    pytest.param(kopf.ConnectionInfo(server='', username='u', password='p'),
                 'Basic ' + base64.b64encode(b'u:p').decode(), id='basic'),
    pytest.param(kopf.ConnectionInfo(server='', username='u', password='p', token='xyz'),
                 'Bearer xyz', id='token-wins-over-basic'),
])
async def test_authorization_header(api: FakeApi, info: kopf.ConnectionInfo, expected: str) -> None:
    pool = SessionPool()
    async with pool.session(KEY, info) as session:
        async with session.get(f'{api.url}/version') as response:
            await response.read()
    await pool.close()
    assert api.requests[0].headers['Authorization'] == expected


async def test_no_authorization_header_without_credentials(api: FakeApi) -> None:
    pool = SessionPool()
    async with pool.session(KEY, kopf.ConnectionInfo(server=api.url)) as session:
        async with session.get(f'{api.url}/version') as response:
            await response.read()
    await pool.close()
    assert 'Authorization' not in api.requests[0].headers


async def test_user_agent_names_the_client(api: FakeApi) -> None:
    pool = SessionPool()
    async with pool.session(KEY, kopf.ConnectionInfo(server=api.url)) as session:
        async with session.get(f'{api.url}/version') as response:
            await response.read()
    await pool.close()
    assert api.requests[0].headers['User-Agent'].startswith('kopf-client/')


async def test_same_credentials_share_one_session() -> None:
    pool = SessionPool()
    info = kopf.ConnectionInfo(server='https://localhost', token='a')
    async with pool.session(KEY, info) as session1:
        pass
    async with pool.session(KEY, info) as session2:
        pass
    await pool.close()
    assert session1 is session2


async def test_replaced_credentials_close_the_unused_old_session() -> None:
    pool = SessionPool()
    async with pool.session(KEY, kopf.ConnectionInfo(server='https://localhost', token='a')) as session1:
        pass
    async with pool.session(KEY, kopf.ConnectionInfo(server='https://localhost', token='b')) as session2:
        assert session1.closed
        assert not session2.closed
    await pool.close()


async def test_retired_session_in_use_is_closed_when_its_last_user_leaves() -> None:
    pool = SessionPool()
    info = kopf.ConnectionInfo(server='https://localhost', token='a')
    async with pool.session(KEY, info) as session:
        await pool.retire(KEY, info)
        closed_while_used = session.closed  # a long watch-stream is not broken by others' 401s
    assert (closed_while_used, session.closed) == (False, True)
    assert len(pool) == 0
    await pool.close()


async def test_retiring_other_credentials_of_the_same_key_keeps_the_session() -> None:
    pool = SessionPool()
    info = kopf.ConnectionInfo(server='https://localhost', token='new')
    async with pool.session(KEY, info) as session:
        pass
    await pool.retire(KEY, kopf.ConnectionInfo(server='https://localhost', token='old'))
    assert not session.closed
    await pool.close()


async def test_closing_the_pool_closes_all_sessions_even_in_use() -> None:
    pool = SessionPool()
    async with pool.session(KEY, kopf.ConnectionInfo(server='https://localhost', token='a')) as session:
        await pool.close()
        assert session.closed
