"""
The client's default login functions, when the operator has no login handlers of its own.

The driver is a fake with scripted login functions: all of them run (as Kopf's
default login handlers do), each contributes what it finds, failures are
ignored, and the vault prefers the highest priority, then the next one.
"""
import logging
from typing import Any, Callable, Optional, Sequence

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError, Vault
from kopf._core.engines.activities import authenticate
from kopf._core.intents.registries import OperatorRegistry


def login_via_first(**_: Any) -> ConnectionInfo:
    return ConnectionInfo(server='https://first', token='first', priority=20)


async def login_via_second(**_: Any) -> ConnectionInfo:
    return ConnectionInfo(server='https://second', token='second', priority=10)


def login_via_nothing(**_: Any) -> Optional[ConnectionInfo]:
    return None


def login_via_broken(**_: Any) -> Optional[ConnectionInfo]:
    raise RuntimeError("no such library config")


class FakeDriver:
    def __init__(self, fns: Sequence[Callable[..., Any]]) -> None:
        self.fns = fns

    def create_client(self, **_: Any) -> Any:
        raise NotImplementedError

    def default_login_fns(self) -> Sequence[Callable[..., Any]]:
        return self.fns


async def login(fns: Sequence[Callable[..., Any]], registry: Optional[OperatorRegistry] = None) -> Vault:
    vault = Vault()
    await authenticate(registry=registry or OperatorRegistry(), settings=OperatorSettings(), vault=vault,
                       driver=FakeDriver(fns), memo=kopf.Memo(), initial=True)
    return vault


async def test_all_default_logins_contribute_and_the_next_is_used_when_one_is_rejected(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger='kopf'):
        vault = await login([login_via_first, login_via_nothing, login_via_broken, login_via_second])
    key, info = await vault.select()
    assert (key, info.token) == ('login_via_first', 'first')
    await vault.invalidate(key, info)
    key, info = await vault.select()
    assert (key, info.token) == ('login_via_second', 'second')
    assert "Activity 'login_via_first' succeeded." in caplog.messages
    assert "Activity 'login_via_nothing' found no credentials." in caplog.messages  # Kopf 1.45.2: succeeded
    assert "Activity 'login_via_second' succeeded." in caplog.messages
    assert any(message.startswith("Activity 'login_via_broken' failed") for message in caplog.messages)


async def test_no_credentials_from_any_default_login_fails() -> None:
    with pytest.raises(LoginError, match="no credentials were retrieved"):
        await login([login_via_nothing])


async def test_own_login_handlers_replace_the_default_ones() -> None:
    registry = OperatorRegistry()

    @kopf.on.login(registry=registry)
    def own_login(**_: Any) -> ConnectionInfo:
        return ConnectionInfo(server='https://own', token='own')

    vault = await login([login_via_first], registry=registry)
    key, info = await vault.select()
    await vault.invalidate(key, info)
    assert (key.rsplit('.', 1)[-1], info.token) == ('own_login', 'own')
    assert vault.is_empty()
