"""
``kopf run --leader-election[=LEASE-NAME]`` and ``--leader-election-namespace``.

``kopf.run`` is a recorder (see conftest) in all but the last tests, where the
real one refuses a bad Lease name before it connects anywhere.
"""
from typing import Any, List

import pytest
from click.testing import CliRunner

from kopf_cli._options import attach_optional_values
from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_configure', 'kopf_set_default_registry')


def test_leader_election_is_off_by_default(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['leader_election'] is None
    assert kopf_run.kwargs['leader_election_namespace'] is None


@pytest.mark.parametrize('args, expected', [
    pytest.param(['FILE', '--leader-election'], True, id='flag-after-the-file'),
    pytest.param(['--leader-election', '--verbose', 'FILE'], True, id='flag-before-an-option'),
    pytest.param(['FILE', '--leader-election=my-lease'], 'my-lease', id='with-a-name'),
    pytest.param(['--leader-election=my-lease', 'FILE'], 'my-lease', id='with-a-name-before-the-file'),
    pytest.param(['--leader-election', 'FILE'], True, id='flag-before-the-file'),
    pytest.param(['--leader-election', 'FILE', '--leader-election=my-lease'], 'my-lease', id='the-last-one-wins'),
])
def test_leader_election_goes_to_the_operator(
        runner: CliRunner, kopf_run: Any, operator_file: str, args: List[str], expected: Any) -> None:
    args = [operator_file if arg == 'FILE' else arg for arg in args]
    result = runner.invoke(main, ['run', *args])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['leader_election'] == expected


def test_leader_election_namespace_goes_to_the_operator(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--leader-election', '--leader-election-namespace=ops'])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['leader_election'] is True
    assert kopf_run.kwargs['leader_election_namespace'] == 'ops'


def test_the_next_argument_is_never_taken_for_the_lease_name(
        runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', '--leader-election', operator_file])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['leader_election'] is True
    assert len(kopf_run.calls) == 1  # the file is loaded: without it, there is nothing to run


def test_a_name_apart_is_a_file_to_load(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', '--leader-election', 'my-lease', operator_file])
    assert result.exit_code != 0
    assert 'my-lease' in result.output
    assert kopf_run.calls == []


@pytest.mark.parametrize('args, expected', [
    (['--leader-election', 'op.py'], ['--leader-election=', 'op.py']),
    (['--leader-election=x', 'op.py'], ['--leader-election=x', 'op.py']),
    (['op.py', '--', '--leader-election'], ['op.py', '--', '--leader-election']),
    (['--leader-election-namespace', 'ns'], ['--leader-election-namespace', 'ns']),
])
def test_bare_optional_values_are_attached_as_empty(args: List[str], expected: List[str]) -> None:
    assert attach_optional_values(args, ['--leader-election']) == expected


def test_a_namespace_without_leader_election_is_refused(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--leader-election-namespace=ops'])
    assert result.exit_code == 2
    assert "--leader-election-namespace is given without --leader-election: " \
           "add --leader-election, or drop the namespace." in result.output


def test_a_lease_name_that_kubernetes_refuses_is_one_clear_message(runner: CliRunner, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--standalone', '--leader-election=Bad_Name!'])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "Error: The leader election's Lease name 'Bad_Name!' is not valid in Kubernetes: use at most 253 "
        "lowercase letters, digits, '-' and '.', starting and ending with a letter or a digit "
        "(e.g. 'my-operator-leader').")
    assert 'Traceback' not in result.output


def test_a_bad_namespace_is_one_clear_message(runner: CliRunner, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--leader-election', '--leader-election-namespace=Ops!'])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "Error: The leader election's namespace 'Ops!' is not a valid namespace name: use at most 63 "
        "lowercase letters, digits and '-', starting and ending with a letter or a digit.")
