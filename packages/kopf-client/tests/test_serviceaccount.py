"""
In-cluster login with the service account's files and environment variables.

The files are fake ones in a temporary directory, given to the reading
function directly, or to the login function via the module's directory
setting; the environment is a plain dict or a patched one.
"""
from __future__ import annotations

import logging
import pathlib
from typing import Dict

import pytest

from kopf_client import _serviceaccount, login_with_service_account
from kopf_client._serviceaccount import read_service_account

ENV = {'KUBERNETES_SERVICE_HOST': '10.96.0.1', 'KUBERNETES_SERVICE_PORT': '443'}


@pytest.fixture()
def sa_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / 'token').write_text('sa-token\n')
    (tmp_path / 'ca.crt').write_text('CA')
    (tmp_path / 'namespace').write_text('operators\n')
    return tmp_path


def test_credentials_are_read_from_the_files(sa_dir: pathlib.Path) -> None:
    info = read_service_account(sa_dir, ENV)
    assert info is not None
    assert info.server == 'https://10.96.0.1:443'
    assert info.scheme == 'Bearer'
    assert info.token == 'sa-token'
    assert info.ca_path == str(sa_dir / 'ca.crt')
    assert info.default_namespace == 'operators'


def test_missing_token_means_not_in_a_cluster(sa_dir: pathlib.Path) -> None:
    (sa_dir / 'token').unlink()
    assert read_service_account(sa_dir, ENV) is None


def test_missing_service_host_means_not_in_a_cluster(sa_dir: pathlib.Path) -> None:
    assert read_service_account(sa_dir, {}) is None


def test_missing_ca_and_namespace_are_tolerated(sa_dir: pathlib.Path) -> None:
    (sa_dir / 'ca.crt').unlink()
    (sa_dir / 'namespace').unlink()
    info = read_service_account(sa_dir, ENV)
    assert info is not None
    assert info.ca_path is None
    assert info.default_namespace is None


@pytest.mark.parametrize('env, server', [
    pytest.param({'KUBERNETES_SERVICE_HOST': '10.0.0.1'}, 'https://10.0.0.1:443', id='default-port'),
    pytest.param({'KUBERNETES_SERVICE_HOST': 'fd00::1', 'KUBERNETES_SERVICE_PORT': '6443'},
                 'https://[fd00::1]:6443', id='ipv6'),
])
def test_server_url_is_built_from_the_environment(sa_dir: pathlib.Path, env: Dict[str, str], server: str) -> None:
    info = read_service_account(sa_dir, env)
    assert info is not None
    assert info.server == server


def test_login_function_uses_the_service_account_directory(
        sa_dir: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(_serviceaccount, 'SERVICE_ACCOUNT_DIR', sa_dir)
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    logger = logging.getLogger('test.login')
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        info = login_with_service_account(logger=logger)
    assert info is not None
    assert info.token == 'sa-token'
    assert [(r.name, r.message) for r in caplog.records] == [
        ('test.login', 'Client is configured in cluster with service account.'),
    ]


def test_login_function_outside_of_a_cluster_returns_nothing(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(_serviceaccount, 'SERVICE_ACCOUNT_DIR', tmp_path / 'absent')
    with caplog.at_level(logging.DEBUG):
        assert login_with_service_account(logger=logging.getLogger('test.login')) is None
    assert caplog.records == []
