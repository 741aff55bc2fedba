"""
The ``kopf`` command group: the version, the help, the commands.
"""
import importlib.metadata
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kopf_cli.main import main


def test_version_is_printed_as_kopf_prints_it(runner: CliRunner) -> None:
    result = runner.invoke(main, ['--version'])
    assert result.exit_code == 0
    core, cli = importlib.metadata.version('kopf-core'), importlib.metadata.version('kopf-cli')
    assert result.output == f"kopf, version {core} (kopf-core {core}, kopf-cli {cli}), compatible with Kopf 1.45.2\n"
    assert result.output.split()[:3] == ['kopf,', 'version', core]  # Kopf's "kopf, version X" comes first


def test_version_is_described_in_the_help(runner: CliRunner) -> None:
    result = runner.invoke(main, ['--help'])
    assert "--version  Show the version and exit." in result.output


def test_help_lists_the_commands(runner: CliRunner) -> None:
    result = runner.invoke(main, ['--help'])
    assert result.exit_code == 0
    assert {'run', 'freeze', 'resume'} <= {line.split()[0] for line in result.output.splitlines()
                                           if line.startswith('  ') and line.split()}


@pytest.mark.parametrize('option', [
    '--verbose', '--debug', '--quiet', '--log-format', '--log-prefix', '--no-log-prefix', '--log-refkey',
    '--namespace', '--all-namespaces', '--standalone', '--peering', '--priority', '--dev', '--liveness',
    '--module',
])
def test_run_help_lists_the_options(runner: CliRunner, option: str) -> None:
    result = runner.invoke(main, ['run', '--help'])
    assert result.exit_code == 0
    assert option in result.output


@pytest.mark.parametrize('command, option', [
    *[('freeze', option) for option in ['--id', '--message', '--lifetime', '--priority', '--namespace',
                                        '--all-namespaces', '--peering', '--dev', '--verbose']],
    *[('resume', option) for option in ['--id', '--namespace', '--all-namespaces', '--peering', '--verbose']],
])
def test_peering_commands_help_lists_the_options(runner: CliRunner, command: str, option: str) -> None:
    result = runner.invoke(main, [command, '--help'])
    assert result.exit_code == 0
    assert option in result.output


def test_python_m_kopf_is_the_kopf_command() -> None:
    result = subprocess.run([sys.executable, '-m', 'kopf', 'run', '--help'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: kopf run [OPTIONS] [PATHS]...")


def test_python_m_kopf_fails_as_the_kopf_command() -> None:
    result = subprocess.run([sys.executable, '-m', 'kopf', 'run', '--no-such-option'],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "Error: No such option '--no-such-option'" in result.stderr


def test_importing_the_core_does_not_import_the_command_line() -> None:
    code = "import kopf, sys; print(sorted({'kopf_cli', 'click'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '[]'
