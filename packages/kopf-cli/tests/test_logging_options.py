"""
The logging options of the commands: they go to ``kopf.configure()``, called first.

``kopf.configure`` and ``kopf.run`` are recorders (see conftest).
"""
from typing import Any, List

import pytest
from click.testing import CliRunner

import kopf
from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_run')


def test_defaults_configure_the_full_format_at_the_info_level(
        runner: CliRunner, kopf_configure: Any, operator_file: str,
) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    assert kopf_configure.kwargs == dict(
        _args=(), debug=False, verbose=False, quiet=False,
        log_format=kopf.LogFormat.FULL, log_prefix=None, log_refkey=None,
    )


@pytest.mark.parametrize('args, key, expected', [
    pytest.param(['--verbose'], 'verbose', True, id='verbose'),
    pytest.param(['-v'], 'verbose', True, id='verbose-short'),
    pytest.param(['--debug'], 'debug', True, id='debug'),
    pytest.param(['-d'], 'debug', True, id='debug-short'),
    pytest.param(['--quiet'], 'quiet', True, id='quiet'),
    pytest.param(['-q'], 'quiet', True, id='quiet-short'),
    pytest.param(['--log-format=plain'], 'log_format', kopf.LogFormat.PLAIN, id='format-plain'),
    pytest.param(['--log-format=full'], 'log_format', kopf.LogFormat.FULL, id='format-full'),
    pytest.param(['--log-format=json'], 'log_format', kopf.LogFormat.JSON, id='format-json'),
    pytest.param(['--log-format=JSON'], 'log_format', kopf.LogFormat.JSON, id='format-uppercase'),
    pytest.param(['--log-prefix'], 'log_prefix', True, id='prefix'),
    pytest.param(['--no-log-prefix'], 'log_prefix', False, id='no-prefix'),
    pytest.param(['--log-refkey=k8s-obj'], 'log_refkey', 'k8s-obj', id='refkey'),
])
def test_logging_options_go_to_the_configuration(
        runner: CliRunner, kopf_configure: Any, operator_file: str, args: List[str], key: str, expected: Any,
) -> None:
    result = runner.invoke(main, ['run', operator_file, *args])
    assert result.exit_code == 0, result.output
    assert kopf_configure.kwargs[key] == expected


def test_unknown_log_formats_are_refused(runner: CliRunner, kopf_configure: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--log-format=xml'])
    assert result.exit_code == 2
    assert "'xml' is not one of 'plain', 'full', 'json'" in result.output
    assert kopf_configure.calls == []


def test_logging_is_configured_before_the_code_is_loaded(
        runner: CliRunner, kopf_configure: Any, tmp_path: Any,
) -> None:
    path = tmp_path / 'handlers.py'
    path.write_text("import kopf\nassert kopf.configure.calls, 'the logging is not configured yet'\n"
                    "kopf.on.startup()(lambda **_: None)\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 0, result.output
