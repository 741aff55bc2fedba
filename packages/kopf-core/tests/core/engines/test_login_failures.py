"""
The login error names each login handler tried and why it has given nothing.

Handlers returning ``None`` say nothing about why: the driver of the default
ones may explain them (``explain_missing_credentials()``), and name the methods
it has not even tried; handlers that failed say it with their errors.
"""
from typing import Any, Callable, Mapping, Optional, Sequence

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError, Vault
from kopf._core.engines.activities import NEXT_STEP, NEXT_STEP_OWN, authenticate
from kopf._core.intents.registries import OperatorRegistry

PREFIX = "Initial authentication has failed: no credentials were retrieved from the login handlers."


def login_with_files(**_: Any) -> Optional[ConnectionInfo]:
    return None


def login_with_broken_files(**_: Any) -> Optional[ConnectionInfo]:
    raise kopf.PermanentError("The file has no current context.\nMore details here.")


def login_with_rejected(**_: Any) -> Optional[ConnectionInfo]:
    return REJECTED


REJECTED = ConnectionInfo(server='https://rejected', token='stale')


class Driver:
    def __init__(self, fns: Sequence[Callable[..., Any]]) -> None:
        self.fns = fns

    def create_client(self, **_: Any) -> Any:
        raise NotImplementedError

    def default_login_fns(self) -> Sequence[Callable[..., Any]]:
        return self.fns


class ExplainingDriver(Driver):
    def explain_missing_credentials(self) -> Mapping[str, str]:
        return {'login_with_files': "no such file: /nowhere", 'login_via_library': "the library is not installed"}


async def login(driver: Driver, registry: Optional[OperatorRegistry] = None, vault: Optional[Vault] = None) -> None:
    await authenticate(registry=registry or OperatorRegistry(), settings=OperatorSettings(),
                       vault=vault if vault is not None else Vault(),
                       driver=driver, memo=kopf.Memo(), initial=True)


async def test_the_drivers_reasons_and_the_untried_methods_are_named() -> None:
    with pytest.raises(LoginError) as err:
        await login(ExplainingDriver([login_with_files, login_with_broken_files]))
    assert str(err.value) == (
        f"{PREFIX}\n"
        f"  Tried: login_with_files (no such file: /nowhere); "
        f"login_with_broken_files (The file has no current context.).\n"
        f"  Not tried: login_via_library (the library is not installed).\n"
        f"  {NEXT_STEP}")


async def test_without_the_drivers_explanations_the_handlers_are_still_named() -> None:
    with pytest.raises(LoginError) as err:
        await login(Driver([login_with_files]))
    assert str(err.value) == f"{PREFIX}\n  Tried: login_with_files (returned no credentials).\n  {NEXT_STEP}"


async def test_credentials_rejected_before_are_said_to_be_so() -> None:
    vault = Vault({'login_with_rejected': REJECTED})
    await vault.invalidate('login_with_rejected', REJECTED)  # type: ignore[arg-type]
    with pytest.raises(LoginError, match=r"Tried: login_with_rejected \(its credentials were rejected before"):
        await login(Driver([login_with_rejected]), vault=vault)


async def test_own_handlers_are_named_without_the_drivers_explanations() -> None:
    registry = OperatorRegistry()

    @kopf.on.login(registry=registry, id='own')
    def login_with_files(**_: Any) -> None:
        return None

    with pytest.raises(LoginError) as err:
        await login(ExplainingDriver([]), registry=registry)
    assert str(err.value) == f"{PREFIX}\n  Tried: own (returned no credentials).\n  {NEXT_STEP_OWN}"


async def test_the_next_step_links_the_authentication_page() -> None:
    assert 'KUBECONFIG' in NEXT_STEP and 'local control plane' in NEXT_STEP
    assert NEXT_STEP.endswith("see Authentication: docs/authentication.md")
    assert NEXT_STEP_OWN.endswith("see Authentication: docs/authentication.md#your-own-login-handler")


async def test_the_log_says_kopfs_one_line_and_the_reasons_only_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(0)
    with pytest.raises(LoginError) as err:
        await login(ExplainingDriver([login_with_files]))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == 'WARNING']
    assert warnings == [PREFIX]  # as Kopf 1.45.2 logs it; the error has the reasons and the next step
    assert "no such file: /nowhere" in str(err.value)
    assert not any("no such file" in r.getMessage() for r in caplog.records)


async def test_a_login_handler_that_returns_nothing_found_no_credentials(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(0)
    with pytest.raises(LoginError):
        await login(Driver([login_with_files]))
    messages = [r.getMessage() for r in caplog.records]
    assert "Activity 'login_with_files' found no credentials." in messages
    assert not any('succeeded' in message for message in messages)
