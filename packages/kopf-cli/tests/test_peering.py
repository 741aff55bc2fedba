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
        self.failure: Optional[Exception] = None

    async def patch_object(
            self, resource: kopf.Resource, *, namespace: Optional[str], name: str, patch: Any, **_: Any,
    ) -> Dict[str, Any]:
        key = (resource.group, resource.plural, namespace, name)
        if self.failure is not None:
            raise self.failure
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
    driver = FakeDriver(set(EXISTING), kopf.ConnectionInfo(server='https://localhost'))
    monkeypatch.setattr(kopf_client, 'driver', driver, raising=False)
    return driver


def the_entry(driver: FakeDriver) -> Dict[str, Any]:
    [(_, patch)] = driver.client.patches
    [(_, entry)] = patch['status'].items()
    assert isinstance(entry, dict)
    return entry


def test_freeze_writes_the_entry_to_the_cluster_peering(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-A', '--lifetime=600', '--id=someone'])
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
    pytest.param(['--dev', '--priority=123'], 666, id='explicit-with-dev'),
])
def test_freeze_priorities(runner: CliRunner, driver: FakeDriver, args: List[str], priority: int) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-A', '-t', '600', *args])
    assert result.exit_code == 0, result.output
    assert the_entry(driver)['priority'] == priority


@pytest.mark.parametrize('args', [
    pytest.param(['-P', 'example', '-i', 'someone', '-p', '123'], id='short'),
    pytest.param(['--peering=example', '--id=someone', '--priority=123'], id='long'),
])
def test_freeze_options(runner: CliRunner, driver: FakeDriver, args: List[str]) -> None:
    result = runner.invoke(main, ['freeze', '-A', '-t', '600', *args])
    assert result.exit_code == 0, result.output
    [(key, patch)] = driver.client.patches
    assert key == ('kopf.dev', 'clusterkopfpeerings', None, 'example')
    assert list(patch['status']) == ['someone']
    assert patch['status']['someone']['priority'] == 123


def test_freeze_options_from_the_environment(runner: CliRunner, driver: FakeDriver) -> None:
    env = {'KOPF_FREEZE_PEERING': 'example', 'KOPF_FREEZE_ID': 'someone', 'KOPF_FREEZE_PRIORITY': '123',
           'KOPF_FREEZE_LIFETIME': '60', 'KOPF_FREEZE_CLUSTERWIDE': 'true'}
    result = runner.invoke(main, ['freeze'], env=env)
    assert result.exit_code == 0, result.output
    [(key, patch)] = driver.client.patches
    assert key == ('kopf.dev', 'clusterkopfpeerings', None, 'example')
    assert patch['status']['someone']['priority'] == 123
    assert patch['status']['someone']['lifetime'] == 60


@pytest.mark.parametrize('args', [
    pytest.param(['-P', 'example', '-i', 'someone'], id='short'),
    pytest.param(['--peering=example', '--id=someone'], id='long'),
])
def test_resume_options(runner: CliRunner, driver: FakeDriver, args: List[str]) -> None:
    result = runner.invoke(main, ['resume', '-A', *args])
    assert result.exit_code == 0, result.output
    key = ('kopf.dev', 'clusterkopfpeerings', None, 'example')
    assert driver.client.patches == [(key, {'status': {'someone': None}})]


def test_resume_options_from_the_environment(runner: CliRunner, driver: FakeDriver) -> None:
    env = {'KOPF_RESUME_PEERING': 'example', 'KOPF_RESUME_ID': 'someone', 'KOPF_RESUME_NAMESPACES': 'ns1'}
    driver.client.existing.add(('kopf.dev', 'kopfpeerings', 'ns1', 'example'))
    result = runner.invoke(main, ['resume'], env=env)
    assert result.exit_code == 0, result.output
    assert driver.client.patches == [(('kopf.dev', 'kopfpeerings', 'ns1', 'example'), {'status': {'someone': None}})]


@pytest.mark.parametrize('command', [['freeze', '-A', '-t', '600'], ['resume', '-A']])
def test_peering_is_required_as_in_kopf(runner: CliRunner, driver: FakeDriver, command: List[str]) -> None:
    result = runner.invoke(main, command)
    assert result.exit_code == 2
    assert "Missing option '-P' / '--peering'" in result.output
    assert driver.client.patches == []


def test_freeze_lifetime_is_stored(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-A', '-t', '600'])
    assert result.exit_code == 0, result.output
    assert the_entry(driver)['lifetime'] == 600


def test_freeze_lastseen_is_now_in_utc(runner: CliRunner, driver: FakeDriver) -> None:
    before = datetime.datetime.now(datetime.timezone.utc)
    result = runner.invoke(main, ['freeze', '-P', 'default', '-A', '-t', '600'])
    after = datetime.datetime.now(datetime.timezone.utc)
    assert result.exit_code == 0, result.output
    lastseen = the_entry(driver)['lastseen']
    assert lastseen.endswith('+00:00')
    assert before <= datetime.datetime.fromisoformat(lastseen) <= after


def test_freeze_identity_is_the_user_and_host_by_default(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-A', '-t', '600'])
    assert result.exit_code == 0, result.output
    [(_, patch)] = driver.client.patches
    assert list(patch['status']) == [f'{getpass.getuser()}@{socket.gethostname()}']


def test_freeze_message_is_not_stored(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-A', '-t', '600', '--message=Maintenance'])
    assert result.exit_code == 0, result.output
    assert 'Maintenance' not in repr(driver.client.patches)


def test_freeze_writes_to_every_namespace(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-n', 'ns1', '-n', 'ns2', '-t', '600'])
    assert result.exit_code == 0, result.output
    assert [key for key, _ in driver.client.patches] == [
        ('kopf.dev', 'kopfpeerings', 'ns1', 'default'),
        ('kopf.dev', 'kopfpeerings', 'ns2', 'default'),
    ]


def test_freeze_falls_back_to_the_legacy_group(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-n', 'legacy-ns', '-t', '600'])
    assert result.exit_code == 0, result.output
    assert [key for key, _ in driver.client.patches] == [('zalando.org', 'kopfpeerings', 'legacy-ns', 'default')]


def test_freeze_uses_the_named_peering(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-A', '-t', '600', '--peering=example'])
    assert result.exit_code == 0, result.output
    assert [key for key, _ in driver.client.patches] == [('kopf.dev', 'clusterkopfpeerings', None, 'example')]


def test_absent_peering_is_reported(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['freeze', '-P', 'default', '-n', 'absent-ns', '-t', '600'])
    assert result.exit_code == 1
    assert "The peering object 'default' (KopfPeering in namespace 'absent-ns') does not exist." in result.output
    assert driver.client.closed


def test_resume_removes_the_entry(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['resume', '-P', 'default', '-A', '--id=someone'])
    assert result.exit_code == 0, result.output
    assert driver.client.patches == [
        (('kopf.dev', 'clusterkopfpeerings', None, 'default'), {'status': {'someone': None}}),
    ]


def test_client_is_closed_after_the_update(runner: CliRunner, driver: FakeDriver) -> None:
    result = runner.invoke(main, ['resume', '-P', 'default', '-A'])
    assert result.exit_code == 0, result.output
    assert driver.client.closed


def test_given_vault_is_used_without_logging_in(runner: CliRunner, driver: FakeDriver) -> None:
    driver.credentials = None  # logging in would fail
    vault = kopf.clients.Vault({'given': kopf.ConnectionInfo(server='https://example.com')})
    result = runner.invoke(main, ['resume', '-P', 'default', '-A'], obj=CLIControls(vault=vault))
    assert result.exit_code == 0, result.output
    assert driver.vaults == [vault]


def test_missing_credentials_are_reported(runner: CliRunner, driver: FakeDriver) -> None:
    driver.credentials = None
    result = runner.invoke(main, ['resume', '-P', 'default', '-A'])
    assert result.exit_code == 1
    assert "No credentials to access the cluster" in result.output


@pytest.mark.parametrize('command', [['freeze', '-P', 'default', '-t', '600'], ['resume', '-P', 'default']])
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
    result = runner.invoke(main, ['freeze', '-P', 'default', '-A', *args])
    assert result.exit_code == 2
    assert "--lifetime" in result.output


@pytest.mark.parametrize('command', [['freeze', '-t', '600'], ['resume']])
@pytest.mark.parametrize('failure, message', [
    pytest.param(kopf.clients.APIForbiddenError({'message': 'kopfpeerings.kopf.dev "default" is forbidden'},
                                                status=403),
                 'Error: Not permitted to update the peering object: kopfpeerings.kopf.dev "default" is forbidden\n',
                 id='forbidden'),
    pytest.param(ConnectionRefusedError(111, "Connect call failed"),
                 'Error: Cannot reach the cluster (check the server in the kubeconfig, and the network): '
                 '[Errno 111] Connect call failed\n', id='unreachable'),
])
def test_cluster_failures_are_one_line(
        runner: CliRunner, driver: FakeDriver, command: List[str], failure: Exception, message: str,
) -> None:
    driver.client.failure = failure
    result = runner.invoke(main, [*command, '-P', 'default', '-A'])
    assert result.exit_code == 1
    assert result.output == message
    assert driver.client.closed
