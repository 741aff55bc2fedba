"""
``kopf freeze`` and ``kopf resume``: the peering entries they write.

The API client is a recording fake behind a fake driver (installed as
``kopf_client.driver``): it knows which peering objects exist and records the
patches; absent objects answer with 404, as the API server does.
"""
import datetime
import getpass
import socket
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import pytest
from click.testing import CliRunner

import kopf
import kopf_client
from kopf_cli import CLIControls
from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_configure')

Key = Tuple[str, str, Optional[str], str]  # group, plural, namespace, name


class FakeClient:
    def __init__(self, existing: Set[Key]) -> None:
        self.existing = existing
        self.patches: List[Tuple[Key, Mapping[str, Any]]] = []
        self.closed = False

    async def patch_object(
            self, resource: kopf.Resource, *, namespace: Optional[str], name: str, patch: Any, **_: Any,
    ) -> Dict[str, Any]:
        key = (resource.group, resource.plural, namespace, name)
        if key not in self.existing:
            raise kopf.clients.APINotFoundError(status=404)
        self.patches.append((key, patch))
        return {}

    async def close(self) -> None:
        self.closed = True


class FakeDriver:
    def __init__(self, existing: Set[Key], credentials: Optional[kopf.ConnectionInfo]) -> None:
        self.client = FakeClient(existing)
        self.credentials = credentials
        self.vaults: List[kopf.clients.Vault] = []

    def create_client(self, *, vault: kopf.clients.Vault, settings: kopf.OperatorSettings) -> FakeClient:
        self.vaults.append(vault)
        return self.client

    def default_login_fns(self) -> Sequence[Any]:
        def login_fn(**_: Any) -> Optional[kopf.ConnectionInfo]:
            return self.credentials
        return [login_fn]


EXISTING: Set[Key] = {
    ('kopf.dev', 'clusterkopfpeerings', None, 'default'),
    ('kopf.dev', 'kopfpeerings', 'ns1', 'default'),
    ('kopf.dev', 'kopfpeerings', 'ns2', 'default'),
    ('zalando.org', 'kopfpeerings', 'legacy-ns', 'default'),
    ('kopf.dev', 'clusterkopfpeerings', None, 'example'),
}


@pytest.fixture()
def driver(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    driver = FakeDriver(EXISTING, kopf.ConnectionInfo(server='https://localhost'))
    monkeypatch.setattr(kopf_client, 'driver', driver, raising=False)
    return driver


def the_entry(driver: FakeDriver) -> Dict[str, Any]:
    [(_, patch)] = driver.client.patches
    [(_, entry)] = patch['status'].items()
    assert isinstance(entry, dict)
    return entry


def test_freeze_writes_the_entry_to_the_cluster_peering(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-A', '--lifetime=600', '--id=someone'])
    assert result.exit_code == 0, result.output
    [(key, patch)] = driver.client.patches
    assert key == ('kopf.dev', 'clusterkopfpeerings', None, 'default')
    assert list(patch) == ['status']
    assert list(patch['status']) == ['someone']
    assert list(patch['status']['someone']) == ['priority', 'lifetime', 'lastseen']


@pytest.mark.parametrize('args, priority', [
    pytest.param([], 100, id='default'),
    pytest.param(['--dev'], 666, id='dev'),
    pytest.param(['--priority=123'], 123, id='explicit'),
    pytest.param(['--dev', '--priority=123'], 123, id='explicit-with-dev'),
])
def test_freeze_priorities(runner: CliRunner, driver: FakeDriver, args: List[str], priority: int) -> None:
    result = runner.invoke(main, ['freeze', '-A', '-t', '600', *args])
    assert result.exit_code == 0, result.output
    assert the_entry(driver)['priority'] == priority


def test_freeze_lifetime_is_stored(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-A', '-t', '600'])
    assert result.exit_code == 0, result.output
    assert the_entry(driver)['lifetime'] == 600


def test_freeze_lastseen_is_now_in_utc(runner: CliRunner, driver: FakeDriver) -> None:
    before = datetime.datetime.now(datetime.timezone.utc)
    result = runner.invoke(main, ['freeze', '-A', '-t', '600'])
    after = datetime.datetime.now(datetime.timezone.utc)
    assert result.exit_code == 0, result.output
    lastseen = the_entry(driver)['lastseen']
    assert lastseen.endswith('+00:00')
    assert before <= datetime.datetime.fromisoformat(lastseen) <= after


def test_freeze_identity_is_the_user_and_host_by_default(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-A', '-t', '600'])
    assert result.exit_code == 0, result.output
    [(_, patch)] = driver.client.patches
    assert list(patch['status']) == [f'{getpass.getuser()}@{socket.gethostname()}']


def test_freeze_message_is_not_stored(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-A', '-t', '600', '--message=Maintenance'])
    assert result.exit_code == 0, result.output
    assert 'Maintenance' not in repr(driver.client.patches)


def test_freeze_writes_to_every_namespace(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-n', 'ns1', '-n', 'ns2', '-t', '600'])
    assert result.exit_code == 0, result.output
    assert [key for key, _ in driver.client.patches] == [
        ('kopf.dev', 'kopfpeerings', 'ns1', 'default'),
        ('kopf.dev', 'kopfpeerings', 'ns2', 'default'),
    ]


def test_freeze_falls_back_to_the_legacy_group(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-n', 'legacy-ns', '-t', '600'])
    assert result.exit_code == 0, result.output
    assert [key for key, _ in driver.client.patches] == [('zalando.org', 'kopfpeerings', 'legacy-ns', 'default')]


def test_freeze_uses_the_named_peering(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-A', '-t', '600', '--peering=example'])
    assert result.exit_code == 0, result.output
    assert [key for key, _ in driver.client.patches] == [('kopf.dev', 'clusterkopfpeerings', None, 'example')]


def test_absent_peering_is_reported(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-n', 'absent-ns', '-t', '600'])
    assert result.exit_code == 1
    assert "The peering object 'default' (KopfPeering in namespace 'absent-ns') does not exist." in result.output
    assert driver.client.closed


def test_resume_removes_the_entry(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['resume', '-A', '--id=someone'])
    assert result.exit_code == 0, result.output
    assert driver.client.patches == [
        (('kopf.dev', 'clusterkopfpeerings', None, 'default'), {'status': {'someone': None}}),
    ]


def test_client_is_closed_after_the_update(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['resume', '-A'])
    assert result.exit_code == 0, result.output
    assert driver.client.closed


def test_given_vault_is_used_without_logging_in(runner: CliRunner, driver: FakeDriver) -> None:
    driver.credentials = None  # logging in would fail
    vault = kopf.clients.Vault({'given': kopf.ConnectionInfo(server='https://example.com')})
    result = runner.invoke(main, ['resume', '-A'], obj=CLIControls(vault=vault))
    assert result.exit_code == 0, result.output
    assert driver.vaults == [vault]


def test_missing_credentials_are_reported(runner: CliRunner, driver: FakeDriver) -> None:
    driver.credentials = None
    result = runner.invoke(main, ['resume', '-A'])
    assert result.exit_code == 1
    assert "No credentials to access the cluster" in result.output


@pytest.mark.parametrize('command', [['freeze', '-t', '600'], ['resume']])
@pytest.mark.parametrize('args, message', [
    pytest.param([], "Specify the scope of the operators", id='no-scope'),
    pytest.param(['-n', 'ns1', '-A'], "Either --namespace or --all-namespaces", id='both-scopes'),
    pytest.param(['-n', 'ns-*'], "Only specific namespaces can be used here", id='pattern'),
])
def test_bad_scopes_are_usage_errors(
        runner: CliRunner, driver: FakeDriver, command: List[str], args: List[str], message: str,
) -> None:
    result = runner.invoke(main, [*command, *args])
    assert result.exit_code == 2
    assert message in result.output
    assert driver.client.patches == []


@pytest.mark.parametrize('args', [
    pytest.param([], id='missing'),
    pytest.param(['-t', '0'], id='zero'),
])
def test_freeze_needs_a_positive_lifetime(runner: CliRunner, driver: FakeDriver, args: List[str]) -> None:
    result = runner.invoke(main, ['freeze', '-A', *args])
    assert result.exit_code == 2
    assert "--lifetime" in result.output
