"""
Connection infos and the vault of credentials.

The vault is used as the API clients and the authenticator use it: populated,
selected from, invalidated, failed. Expiration is checked against the real
clock, so expiring credentials are made either clearly past or clearly future,
except for one test with a tiny real wait for the expiration itself.
"""
import asyncio
import dataclasses
import datetime
import logging
import random
from typing import Any, List, Sequence

import pytest

from kopf._cogs.structs.credentials import ConnectionInfo, LoginError, Vault, VaultKey
from kopf._core.actions.progression import HandlerOutcome

UTC = datetime.timezone.utc
PAST = datetime.datetime(2000, 1, 1, tzinfo=UTC)
FUTURE = datetime.datetime(2999, 1, 1, tzinfo=UTC)


def info(token: str, *, priority: int = 0, expiration: Any = None) -> ConnectionInfo:
    return ConnectionInfo(server='https://localhost', token=token, priority=priority, expiration=expiration)


# Connection infos.

def test_no_expiration_never_expires() -> None:
    assert info('t').expiration_utc is None
    assert not info('t').is_expired()


def test_naive_expiration_is_taken_as_utc() -> None:
    naive = datetime.datetime(2020, 1, 1, 12, 0, 0)
    assert info('t', expiration=naive).expiration_utc == datetime.datetime(2020, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_aware_expiration_is_converted_to_utc() -> None:
    tz = datetime.timezone(datetime.timedelta(hours=3))
    aware = datetime.datetime(2020, 1, 1, 12, 0, 0, tzinfo=tz)
    assert info('t', expiration=aware).expiration_utc == datetime.datetime(2020, 1, 1, 9, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize('expiration, expected', [
    pytest.param(datetime.datetime(2020, 1, 1, 11, 59, 59), True, id='naive-before'),
    pytest.param(datetime.datetime(2020, 1, 1, 12, 0, 1), False, id='naive-after'),
    pytest.param(datetime.datetime(2020, 1, 1, 14, 59, 59, tzinfo=datetime.timezone(datetime.timedelta(hours=3))),
                 True, id='aware-before'),
    pytest.param(datetime.datetime(2020, 1, 1, 15, 0, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=3))),
                 False, id='aware-after'),
    pytest.param(datetime.datetime(2020, 1, 1, 12, 0, 0), True, id='exactly-now'),
])
def test_expiration_is_compared_in_utc(expiration: datetime.datetime, expected: bool) -> None:
    now = datetime.datetime(2020, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert info('t', expiration=expiration).is_expired(now) is expected


# Reprs: they reach logs, error trackers, and test reports (issue 27 §4).

TOKEN, PASSWORD, KEY = 'secret-token-1', 'secret-password-2', b'-----BEGIN PRIVATE KEY-----secret-key-3'


def full_info() -> ConnectionInfo:
    return ConnectionInfo(
        server='https://k8s.example:6443', ca_path='/ca.crt', insecure=False,
        username='admin', password=PASSWORD, scheme='Bearer', token=TOKEN,
        certificate_data=b'-----BEGIN CERTIFICATE-----public', private_key_data=KEY,
        default_namespace='ns', priority=5, trust_env=True)


def test_repr_hides_the_secrets_and_shows_the_rest() -> None:
    assert repr(full_info()) == (
        "ConnectionInfo(server='https://k8s.example:6443', ca_path='/ca.crt', ca_data=None, insecure=False, "
        "username='admin', password=<hidden>, scheme='Bearer', token=<hidden>, certificate_path=None, "
        "certificate_data=b'-----BEGIN CERTIFICATE-----public', private_key_path=None, "
        "private_key_data=<hidden>, default_namespace='ns', priority=5, expiration=None, trust_env=True, "
        "proxy_url=None)")


def test_repr_shows_the_absent_secrets_as_none() -> None:
    text = repr(ConnectionInfo(server='https://k8s.example', private_key_path='/client.key'))
    assert "password=None" in text and "token=None" in text and "private_key_data=None" in text
    assert "private_key_path='/client.key'" in text  # a path is not a secret


def test_str_is_the_repr() -> None:
    assert str(full_info()) == repr(full_info())


def test_the_secrets_are_still_there_and_compared() -> None:
    info = full_info()
    assert (info.token, info.password, info.private_key_data) == (TOKEN, PASSWORD, KEY)
    assert info == full_info()
    assert info != dataclasses.replace(info, token='another-token')
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.token = 'x'  # type: ignore[misc]


def test_the_fields_are_those_of_a_dataclass() -> None:
    assert [field.name for field in dataclasses.fields(ConnectionInfo)] == [
        'server', 'ca_path', 'ca_data', 'insecure', 'username', 'password', 'scheme', 'token',
        'certificate_path', 'certificate_data', 'private_key_path', 'private_key_data',
        'default_namespace', 'priority', 'expiration', 'trust_env', 'proxy_url']


def test_no_secrets_in_the_objects_that_hold_connection_infos(caplog: pytest.LogCaptureFixture) -> None:
    info = full_info()
    vault = Vault({'login_fn': info})
    holders = [info, vault, *vault._current.values(), HandlerOutcome(final=True, result=info), [info], {'k': info}]
    logger = logging.getLogger('test.secrets')
    with caplog.at_level(logging.DEBUG, logger='test.secrets'):
        for holder in holders:
            logger.info("%r / %s", holder, holder)
            logger.info(f"{holder!r} / {holder}")
    texts = [*map(repr, holders), *map(str, holders), caplog.text]
    assert caplog.records
    for secret in (TOKEN, PASSWORD, KEY.decode()):
        assert not [text for text in texts if secret in text]


# Selecting.

async def test_credentials_given_at_creation_are_selected() -> None:
    vault = Vault({'k': info('t')})
    assert await vault.select() == ('k', info('t'))


async def test_only_the_highest_priority_is_offered_for_the_random_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    offered: List[Sequence[Any]] = []

    def fake_choice(seq: Sequence[Any]) -> Any:
        offered.append(list(seq))
        return seq[0]

    monkeypatch.setattr(random, 'choice', fake_choice)
    vault = Vault({'low': info('l', priority=1), 'high1': info('h1', priority=9), 'high2': info('h2', priority=9)})
    await vault.select()
    assert [sorted(keys) for keys in offered] == [['high1', 'high2']]


async def test_the_choice_among_the_highest_priority_is_random() -> None:
    vault = Vault({'low': info('l', priority=1), 'high1': info('h1', priority=9), 'high2': info('h2', priority=9)})
    keys = {(await vault.select())[0] for _ in range(200)}
    assert keys == {'high1', 'high2'}


async def test_expired_credentials_are_never_selected() -> None:
    vault = Vault({'expired': info('e', priority=9, expiration=PAST), 'valid': info('v', expiration=FUTURE)})
    keys = {(await vault.select())[0] for _ in range(50)}
    assert keys == {'valid'}


async def test_vault_with_only_expired_credentials_is_empty() -> None:
    vault = Vault({'expired': info('e', expiration=PAST)})
    assert vault.is_empty()
    assert not vault


async def test_iterating_yields_valid_credentials() -> None:
    vault = Vault({'k': info('t')})
    async for key, item in vault:
        assert (key, item) == ('k', info('t'))
        break


# Invalidating and re-populating.

async def test_invalidation_removes_only_the_reported_credentials() -> None:
    vault = Vault({'k1': info('t1'), 'k2': info('t2')})
    await vault.invalidate(VaultKey('k1'), info('t1'))
    keys = {(await vault.select())[0] for _ in range(50)}
    assert keys == {'k2'}


async def test_invalidation_of_stale_credentials_keeps_the_newer_ones_of_the_same_key() -> None:
    vault = Vault({'k': info('old')})
    await vault.populate({'k': info('new')})
    await vault.invalidate(VaultKey('k'), info('old'))
    assert await vault.select() == ('k', info('new'))


async def test_invalidated_credentials_are_never_accepted_again() -> None:
    vault = Vault({'k': info('t')})
    await vault.invalidate(VaultKey('k'), info('t'))
    await vault.populate({'k': info('t')})
    assert vault.is_empty()


async def test_other_credentials_of_an_invalidated_key_are_accepted() -> None:
    vault = Vault({'k': info('t')})
    await vault.invalidate(VaultKey('k'), info('t'))
    await vault.populate({'k': info('t2')})
    assert await vault.select() == ('k', info('t2'))


async def test_invalidation_with_the_error_waits_for_the_new_credentials() -> None:
    vault = Vault({'k': info('t')})
    error = RuntimeError("401 Unauthorized")
    invalidating = asyncio.create_task(vault.invalidate(VaultKey('k'), info('t'), exc=error))
    await asyncio.sleep(0.01)
    assert not invalidating.done()  # nothing is left: it waits for the re-authentication
    await vault.populate({'k': info('t2')})
    await asyncio.wait_for(invalidating, timeout=1)
    assert await vault.select() == ('k', info('t2'))


async def test_invalidation_with_the_error_raises_it_when_the_reauthentication_fails() -> None:
    vault = Vault({'k': info('t')})
    error = RuntimeError("401 Unauthorized")
    invalidating = asyncio.create_task(vault.invalidate(VaultKey('k'), info('t'), exc=error))
    await asyncio.sleep(0.01)
    await vault.fail(LoginError("No credentials were retrieved."))
    with pytest.raises(LoginError, match=r"Re-authentication after RuntimeError\('401 Unauthorized'\) has failed: "
                                         r"No credentials were retrieved\.") as err:
        await asyncio.wait_for(invalidating, timeout=1)
    assert err.value.__cause__ is error


async def test_invalidation_with_the_error_returns_at_once_while_other_credentials_remain() -> None:
    vault = Vault({'k1': info('t1'), 'k2': info('t2')})
    await asyncio.wait_for(vault.invalidate(VaultKey('k1'), info('t1'), exc=RuntimeError()), timeout=1)
    assert await vault.select() == ('k2', info('t2'))


async def test_invalidation_without_the_error_returns_at_once_even_if_nothing_is_left() -> None:
    vault = Vault({'k': info('t')})
    await asyncio.wait_for(vault.invalidate(VaultKey('k'), info('t')), timeout=1)
    assert vault.is_empty()


async def test_selecting_waits_while_empty_and_wakes_on_population() -> None:
    vault = Vault()
    task = asyncio.create_task(vault.select())
    await asyncio.sleep(0)
    assert not task.done()
    await vault.populate({'k': info('t')})
    assert await asyncio.wait_for(task, timeout=1) == ('k', info('t'))


async def test_selecting_waits_after_the_last_credentials_are_invalidated() -> None:
    vault = Vault({'k': info('t')})
    await vault.invalidate(VaultKey('k'), info('t'))
    task = asyncio.create_task(vault.select())
    await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_waiters_fail_with_login_error_when_relogin_fails() -> None:
    vault = Vault()
    task = asyncio.create_task(vault.select())
    await asyncio.sleep(0)
    await vault.fail(Exception("no credentials"))
    with pytest.raises(LoginError, match=r"no credentials"):
        await asyncio.wait_for(task, timeout=1)


async def test_later_selections_fail_with_login_error_after_the_failure() -> None:
    vault = Vault()
    await vault.fail(Exception("no credentials"))
    with pytest.raises(LoginError):
        await vault.select()


async def test_population_after_a_failure_makes_the_vault_usable_again() -> None:
    vault = Vault()
    await vault.fail(Exception("no credentials"))
    await vault.populate({'k': info('t')})
    assert await vault.select() == ('k', info('t'))


# Waiting for emptiness (i.e. for the need to re-login).

async def test_emptiness_of_an_empty_vault_is_reached_at_once() -> None:
    vault = Vault()
    task = asyncio.create_task(vault.wait_for_emptiness())
    await asyncio.sleep(0)  # the task's first step, and no more
    assert task.done()
    assert task.exception() is None
    assert vault.is_empty()


async def test_emptiness_is_not_reached_while_there_are_valid_credentials() -> None:
    vault = Vault({'k': info('t')})
    task = asyncio.create_task(vault.wait_for_emptiness())
    await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_emptiness_is_reached_when_the_last_credentials_are_invalidated() -> None:
    vault = Vault({'k': info('t')})
    task = asyncio.create_task(vault.wait_for_emptiness())
    await asyncio.sleep(0)
    assert not task.done()
    await vault.invalidate(VaultKey('k'), info('t'))
    await asyncio.wait_for(task, timeout=1)
    assert vault.is_empty()


async def test_emptiness_is_reached_when_the_last_credentials_expire_without_any_use() -> None:
    soon = datetime.datetime.now(UTC) + datetime.timedelta(milliseconds=20)
    vault = Vault({'k': info('t', expiration=soon)})
    assert not vault.is_empty()
    await asyncio.wait_for(vault.wait_for_emptiness(), timeout=1)
    assert vault.is_empty()
