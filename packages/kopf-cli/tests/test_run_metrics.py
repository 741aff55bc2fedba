"""
``kopf run --metrics=URL``: the option goes to ``metrics_endpoint=`` of ``kopf.run()``.

``kopf.run`` is a recorder (see conftest); the operator is never started (the serving
and its errors are tested with a real operator in ``integration/test_metrics.py``).
"""
import re
from typing import Any

import pytest
from click.testing import CliRunner

from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_configure', 'kopf_set_default_registry')


def test_no_metrics_endpoint_by_default(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['metrics_endpoint'] is None


def test_the_metrics_endpoint_goes_to_the_operator(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file, '--metrics=http://0.0.0.0:9090/metrics'])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['metrics_endpoint'] == 'http://0.0.0.0:9090/metrics'


def test_the_metrics_endpoint_from_the_environment(runner: CliRunner, kopf_run: Any, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file], env={'KOPF_RUN_METRICS_ENDPOINT': 'http://:9090/m'})
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['metrics_endpoint'] == 'http://:9090/m'


def test_the_option_is_in_the_help(runner: CliRunner) -> None:
    result = runner.invoke(main, ['run', '--help'])
    assert '--metrics URL' in result.output
    unwrapped = re.sub(r'-\n\s+', '-', result.output)  # click wraps the help at the hyphens too
    assert '(needs kopf-client[metrics])' in unwrapped
