"""
``kopf run --namespace`` refuses the patterns that can never match a namespace, before importing anything.
"""
import pathlib
from typing import Any

import pytest
from click.testing import CliRunner

from kopf_cli.main import main


@pytest.fixture()
def tracked_operator(tmp_path: pathlib.Path) -> str:
    """An operator file that leaves a trace when imported: a refusal must come before the import."""
    path = tmp_path / 'handlers.py'
    marker = tmp_path / 'imported'
    path.write_text(f"import kopf, pathlib\npathlib.Path({str(marker)!r}).touch()\n"
                    f"kopf.on.startup()(lambda **_: None)\n")
    return str(path)


@pytest.mark.parametrize('pattern, problem', [
    ('Bad_NS!', "'B' is not allowed in namespace names"),
    ('[', "'[' is not closed with ']'"),
    ('-ns', "namespace names neither start nor end with '-'"),
])
def test_patterns_that_never_match_are_a_usage_error(
        runner: CliRunner, kopf_run: Any, tracked_operator: str, pattern: str, problem: str,
) -> None:
    result = runner.invoke(main, ['run', tracked_operator, '-n', 'ns1', '-n', pattern])
    assert result.exit_code == 2
    assert f"Invalid value for '-n' / '--namespace': The namespace pattern {pattern!r} " \
           f"can never match a namespace: {problem}." in result.output
    assert 'Traceback' not in result.output
    assert kopf_run.calls == []
    assert not (pathlib.Path(tracked_operator).parent / 'imported').exists()


def test_patterns_from_the_environment_are_checked(runner: CliRunner, kopf_run: Any, tracked_operator: str) -> None:
    result = runner.invoke(main, ['run', tracked_operator], env={'KOPF_RUN_NAMESPACES': 'My_NS'})
    assert result.exit_code == 2
    assert "The namespace pattern 'My_NS' can never match a namespace" in result.output
    assert kopf_run.calls == []


def test_the_legacy_variable_is_checked(runner: CliRunner, kopf_run: Any, tracked_operator: str) -> None:
    result = runner.invoke(main, ['run', tracked_operator], env={'KOPF_RUN_NAMESPACE': 'ns['})
    assert result.exit_code == 2
    assert "The namespace pattern 'ns[' can never match a namespace" in result.output
    assert kopf_run.calls == []


@pytest.mark.parametrize('pattern', ['ns1', 'myapp-*,!*-pr-*,*-pr-123', '!kube-*', 'ns[0-9]', 'team-??'])
def test_valid_patterns_go_to_the_operator(
        runner: CliRunner, kopf_run: Any, tracked_operator: str, pattern: str,
) -> None:
    result = runner.invoke(main, ['run', tracked_operator, '-n', pattern])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['namespaces'] == (pattern,)
