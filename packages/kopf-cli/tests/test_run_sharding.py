"""
``kopf run --shards=auto`` and ``--shard-by``: passed to the operator; refused with ``--leader-election``.

``kopf.run`` is a recorder (see conftest).
"""
from typing import Any

import pytest
from click.testing import CliRunner

from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_configure', 'kopf_set_default_registry')


def test_sharding_is_off_by_default(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['shards'] is None and kopf_run.kwargs['shard_by'] is None


def test_the_options_go_to_the_operator(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--shards=auto', '--shard-by=namespace'])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['shards'] == 'auto' and kopf_run.kwargs['shard_by'] == 'namespace'


@pytest.mark.parametrize('args', [['--shards=manual'], ['--shards=auto', '--shard-by=name']])
def test_other_values_are_refused(runner: CliRunner, kopf_run: Any, operator_file: str, args: list[str]) -> None:
    result = runner.invoke(main, ['run', operator_file, *args])
    assert result.exit_code == 2
    assert "Invalid value for" in result.output
    assert kopf_run.calls == []


def test_leader_election_with_sharding_is_refused(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--shards=auto', '--leader-election'])
    assert result.exit_code == 2
    assert "--shards=auto and --leader-election cannot be combined" in result.output
    assert kopf_run.calls == []
