"""
Why the default logins have found nothing, as the driver explains it for the login error.

The environment is isolated per test (no kubeconfig, no service account, libraries
hidden or faked), and the login functions are called as the framework calls them.
"""
from __future__ import annotations

import importlib.machinery
import logging
import pathlib
import sys
import types

import pytest

from kopf_client import _serviceaccount, driver, login_with_kubeconfig, login_with_service_account

LOGGER = logging.getLogger('test')


@pytest.fixture(autouse=True)
def nowhere(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    home = tmp_path / 'home'
    home.mkdir()
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.delenv('KUBECONFIG', raising=False)
    monkeypatch.delenv('KUBERNETES_SERVICE_HOST', raising=False)
    monkeypatch.setattr(_serviceaccount, 'SERVICE_ACCOUNT_DIR', tmp_path / 'sa')
    return home


def hide_libraries(monkeypatch: pytest.MonkeyPatch, *, except_: str = '') -> None:
    for name in ['pykube', 'kubernetes', 'kubernetes_asyncio']:
        if name == except_:
            module = types.ModuleType(name)
            module.__spec__ = importlib.machinery.ModuleSpec(name, None)
            monkeypatch.setitem(sys.modules, name, module)
        else:
            monkeypatch.setitem(sys.modules, name, None)


def test_the_built_in_logins_say_what_they_looked_for(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, nowhere: pathlib.Path) -> None:
    hide_libraries(monkeypatch)
    assert login_with_service_account(logger=LOGGER) is None
    assert login_with_kubeconfig(logger=LOGGER) is None
    assert driver.explain_missing_credentials() == {
        'login_with_service_account': f"not in a cluster: $KUBERNETES_SERVICE_HOST is not set, "
                                      f"and no token file at {tmp_path / 'sa' / 'token'}",
        'login_with_kubeconfig': f"no kubeconfig: $KUBECONFIG is not set, "
                                 f"and {nowhere / '.kube' / 'config'} does not exist",
        'login_via_pykube': "the 'pykube-ng' library is not installed",
        'login_via_client': "the 'kubernetes' library is not installed",
        'login_via_async_client': "the 'kubernetes_asyncio' library is not installed",
    }


def test_a_service_host_without_the_token_is_named_alone(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    hide_libraries(monkeypatch)
    monkeypatch.setenv('KUBERNETES_SERVICE_HOST', '10.96.0.1')
    assert login_with_service_account(logger=LOGGER) is None
    reasons = driver.explain_missing_credentials()
    assert reasons['login_with_service_account'] == f"not in a cluster: no token file at {tmp_path / 'sa' / 'token'}"


def test_an_installed_library_is_not_said_to_be_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_libraries(monkeypatch, except_='kubernetes')
    reasons = driver.explain_missing_credentials()
    assert reasons['login_via_pykube'] == "the 'pykube-ng' library is not installed"
    assert 'login_via_client' not in reasons and 'login_via_async_client' not in reasons  # the client was tried
    assert 'login_with_kubeconfig' not in reasons  # not among the defaults with a library installed
