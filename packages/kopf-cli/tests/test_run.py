"""
``kopf run``: every option goes to the right argument of ``kopf.run()``.

``kopf.run`` is a recorder (see conftest); the operator is never started.
"""
import asyncio
import sys
import threading
from typing import Any, Dict, List

import pytest
from click.testing import CliRunner

import kopf
from kopf_cli import CLIControls
from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_configure', 'kopf_set_default_registry')


def test_defaults_are_passed_when_no_options_are_given(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    kwargs = kopf_run.kwargs
    assert kwargs['standalone'] is None
    assert kwargs['priority'] is None
    assert kwargs['peering_name'] is None
    assert kwargs['liveness_endpoint'] is None
    assert kwargs['clusterwide'] is False
    assert kwargs['namespaces'] == ()


@pytest.mark.parametrize('args, key, expected', [
    pytest.param(['--standalone'], 'standalone', True, id='standalone'),
    pytest.param(['--priority=100'], 'priority', 100, id='priority'),
    pytest.param(['--dev'], 'priority', 666, id='dev'),
    pytest.param(['--dev', '--priority=100'], 'priority', 666, id='dev-with-priority'),
    pytest.param(['--peering=example'], 'peering_name', 'example', id='peering'),
    pytest.param(['--liveness=http://0.0.0.0:8080/healthz'], 'liveness_endpoint', 'http://0.0.0.0:8080/healthz',
                 id='liveness'),
    pytest.param(['--all-namespaces'], 'clusterwide', True, id='all-namespaces'),
    pytest.param(['-A'], 'clusterwide', True, id='all-namespaces-short'),
    pytest.param(['--namespace=ns1'], 'namespaces', ('ns1',), id='namespace'),
    pytest.param(['-n', 'ns1', '-n', 'ns2'], 'namespaces', ('ns1', 'ns2'), id='namespaces-repeated'),
    pytest.param(['-n', 'myapp-*,!*-pr-*'], 'namespaces', ('myapp-*,!*-pr-*',), id='namespace-pattern'),
    pytest.param(['-p', '100'], 'priority', 100, id='priority-short'),
    pytest.param(['-P', 'example'], 'peering_name', 'example', id='peering-short'),
    pytest.param(['-L', 'http://0.0.0.0:8080/healthz'], 'liveness_endpoint', 'http://0.0.0.0:8080/healthz',
                 id='liveness-short'),
])
def test_options_go_to_the_operator(
        runner: CliRunner, kopf_run: Any, operator_file: str, args: List[str], key: str, expected: Any,
) -> None:
    result = runner.invoke(main, ['run', operator_file, *args])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs[key] == expected


@pytest.mark.parametrize('env, key, expected', [
    pytest.param({'KOPF_RUN_PEERING': 'example'}, 'peering_name', 'example', id='peering'),
    pytest.param({'KOPF_RUN_PRIORITY': '100'}, 'priority', 100, id='priority'),
    pytest.param({'KOPF_RUN_DEV': 'true'}, 'priority', 666, id='dev'),
    pytest.param({'KOPF_RUN_STANDALONE': 'true'}, 'standalone', True, id='standalone'),
    pytest.param({'KOPF_RUN_STANDALONE': 'false'}, 'standalone', False, id='not-standalone'),
    pytest.param({'KOPF_RUN_LIVENESS_ENDPOINT': 'http://:8080/'}, 'liveness_endpoint', 'http://:8080/',
                 id='liveness'),
    pytest.param({'KOPF_RUN_CLUSTERWIDE': '1'}, 'clusterwide', True, id='clusterwide'),
    pytest.param({'KOPF_RUN_NAMESPACES': 'ns1 ns2'}, 'namespaces', ('ns1', 'ns2'), id='namespaces'),
    pytest.param({'KOPF_RUN_NAMESPACE': 'ns1'}, 'namespaces', ('ns1',), id='namespace-legacy'),
    pytest.param({'KOPF_RUN_NAMESPACES': 'ns1', 'KOPF_RUN_NAMESPACE': 'ns2'}, 'namespaces', ('ns1', 'ns2'),
                 id='namespace-legacy-added'),
])
def test_environment_variables_go_to_the_operator(
        runner: CliRunner, kopf_run: Any, operator_file: str, env: Dict[str, str], key: str, expected: Any,
) -> None:
    result = runner.invoke(main, ['run', operator_file], env=env)
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs[key] == expected


def test_options_win_over_environment_variables(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '-P', 'option'], env={'KOPF_RUN_PEERING': 'env'})
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['peering_name'] == 'option'


def test_modules_from_the_environment_are_imported(
        runner: CliRunner, kopf_run: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, handler_code: str,
) -> None:
    (tmp_path / 'env_module.py').write_text(handler_code + "LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = runner.invoke(main, ['run'], env={'KOPF_RUN_MODULES': 'env_module'})
    assert result.exit_code == 0, result.output
    assert sys.modules['env_module'].LOADED is True


def test_namespaces_and_all_namespaces_together_are_refused(
        runner: CliRunner, kopf_run: Any, operator_file: str,
) -> None:
    result = runner.invoke(main, ['run', operator_file, '-n', 'ns1', '-A'])
    assert result.exit_code == 2
    assert "Either --namespace or --all-namespaces" in result.output
    assert kopf_run.calls == []


def test_non_numeric_priority_is_refused(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--priority=high'])
    assert result.exit_code == 2
    assert "'high' is not a valid integer" in result.output


def test_controls_go_to_the_operator(
        runner: CliRunner, kopf_run: Any, operator_file: str, registry_with_a_handler: kopf.OperatorRegistry,
) -> None:
    loop = asyncio.new_event_loop()
    try:
        controls = CLIControls(
            ready_flag=threading.Event(),
            stop_flag=threading.Event(),
            vault=kopf.clients.Vault(),
            registry=registry_with_a_handler,
            settings=kopf.OperatorSettings(),
            loop=loop,
        )
        result = runner.invoke(main, ['run', operator_file], obj=controls)
    finally:
        loop.close()
    assert result.exit_code == 0, result.output
    kwargs: Dict[str, Any] = kopf_run.kwargs
    assert kwargs['ready_flag'] is controls.ready_flag
    assert kwargs['stop_flag'] is controls.stop_flag
    assert kwargs['vault'] is controls.vault
    assert kwargs['registry'] is controls.registry
    assert kwargs['settings'] is controls.settings
    assert kwargs['loop'] is controls.loop


def test_no_controls_mean_no_flags_and_defaults(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    kwargs: Dict[str, Any] = kopf_run.kwargs
    assert [kwargs[key] for key in ['ready_flag', 'stop_flag', 'vault', 'registry', 'settings']] == [None] * 5


def test_given_registry_becomes_the_default_before_the_import(
        runner: CliRunner, kopf_run: Any,
        kopf_set_default_registry: Any, tmp_path: Any, registry_with_a_handler: kopf.OperatorRegistry,
) -> None:
    path = tmp_path / 'handlers.py'
    path.write_text("import kopf\nassert kopf.set_default_registry.calls, 'the registry is not set yet'\n")
    registry = registry_with_a_handler
    result = runner.invoke(main, ['run', str(path)], obj=CLIControls(registry=registry))
    assert result.exit_code == 0, result.output
    assert kopf_set_default_registry.calls == [{'_args': (registry,)}]


def test_no_registry_keeps_the_default_one(
        runner: CliRunner, kopf_run: Any, kopf_set_default_registry: Any, operator_file: str,
) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    assert kopf_set_default_registry.calls == []


def test_operator_runs_after_the_code_is_loaded(runner: CliRunner, kopf_run: Any, tmp_path: Any) -> None:
    path = tmp_path / 'handlers.py'
    path.write_text("import kopf\nassert not kopf.run.calls, 'the operator runs before the import'\n"
                    "kopf.on.startup()(lambda **_: None)\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 0, result.output
    assert len(kopf_run.calls) == 1


@pytest.mark.parametrize('url, message', [
    ('https://0.0.0.0:8080/healthz', "must be an http:// URL"),
    ('http://0.0.0.0:port/healthz', "is not a valid URL"),
])
def test_a_bad_liveness_url_is_one_line_before_anything_starts(
        runner: CliRunner, operator_file: str, url: str, message: str,
) -> None:
    # The real kopf.run(): the URL is checked before any request to the cluster.
    result = runner.invoke(main, ['run', operator_file, '-A', f'--liveness={url}'])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: The liveness endpoint {url!r} ")
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize('error', [
    pytest.param(ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)"), id='refused'),
    pytest.param(TimeoutError("Connection timeout to host https://10.0.0.1"), id='timeout'),
])
def test_unreachable_cluster_is_one_line(
        runner: CliRunner, operator_file: str, monkeypatch: pytest.MonkeyPatch, error: OSError,
) -> None:
    def failing_run(**_: Any) -> None:
        raise error

    monkeypatch.setattr(kopf, 'run', failing_run)
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 1
    assert result.output == ("Error: Cannot reach the cluster (check the server in the kubeconfig, and the network): "
                             f"{error}\n")


def test_other_operator_failures_keep_their_traceback(
        runner: CliRunner, operator_file: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def failing_run(**_: Any) -> None:
        raise ValueError("a bug")

    monkeypatch.setattr(kopf, 'run', failing_run)
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 1
    assert isinstance(result.exception, ValueError)
