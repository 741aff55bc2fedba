"""
KopfRunner: the ``kopf`` command in a thread of the test.

Inputs: small operator files written to a temporary directory; their own
``@kopf.on.login`` handler points to an address where nothing listens, so no
cluster is needed (nor contacted before the moments these tests check).
Outputs: the runner's exit code, output and exceptions. The real cluster case
is in the integration tests.
"""
import pathlib
import textwrap

import pytest

import kopf
from kopf.testing import KopfRunner

LOGIN = '''
import kopf

@kopf.on.login()
def login_fn(**_):
    return kopf.ConnectionInfo(server='https://127.0.0.1:9')
'''


def write_operator(tmp_path: pathlib.Path, code: str) -> str:
    path = tmp_path / 'operator.py'
    path.write_text(LOGIN + textwrap.dedent(code))
    return str(path)


def test_the_operator_runs_until_the_block_exits(tmp_path: pathlib.Path) -> None:
    path = write_operator(tmp_path, '''
        @kopf.on.startup()
        def started(logger, **_):
            logger.info("The startup handler has run.")
    ''')
    with KopfRunner(['run', '--standalone', '-A', path], timeout=30) as runner:
        pass
    assert runner.exit_code == 0
    assert runner.exception is None
    assert "The startup handler has run." in runner.stdout


def test_the_block_starts_after_the_startup_handlers(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / 'started'
    path = write_operator(tmp_path, f'''
        import pathlib

        @kopf.on.startup()
        def started(**_):
            pathlib.Path({str(marker)!r}).write_text('yes')
    ''')
    with KopfRunner(['run', '--standalone', '-A', path], timeout=30):
        assert marker.read_text() == 'yes'


def test_operator_failures_are_reraised(tmp_path: pathlib.Path) -> None:
    path = write_operator(tmp_path, '''
        @kopf.on.startup(errors=kopf.ErrorsMode.PERMANENT)
        def broken(**_):
            raise ValueError("boom")
    ''')
    with pytest.raises(Exception) as info:
        with KopfRunner(['run', '--standalone', '-A', path], timeout=30):
            pass
    assert 'startup' in str(info.value)


def test_operator_failures_are_kept_without_reraising(tmp_path: pathlib.Path) -> None:
    path = write_operator(tmp_path, '''
        @kopf.on.startup(errors=kopf.ErrorsMode.PERMANENT)
        def broken(**_):
            raise ValueError("boom")
    ''')
    with KopfRunner(['run', '--standalone', '-A', path], timeout=30, reraise=False) as runner:
        pass
    assert runner.exit_code != 0
    assert runner.exception is not None
    assert "boom" in runner.stdout


def test_handlers_land_in_the_runners_registry(tmp_path: pathlib.Path) -> None:
    registry = kopf.OperatorRegistry()
    path = write_operator(tmp_path, '''
        @kopf.on.create('kopfexamples')
        def create_fn(**_):
            pass
    ''')
    with KopfRunner(['run', '--standalone', '-A', path], registry=registry, timeout=30):
        pass
    assert [str(selector) for selector in registry.selectors] == ["Selector(any_name='kopfexamples')"]


def test_results_are_unavailable_while_running(tmp_path: pathlib.Path) -> None:
    path = write_operator(tmp_path, '')
    with KopfRunner(['run', '--standalone', '-A', path], timeout=30) as runner:
        with pytest.raises(RuntimeError, match="only after it has exited"):
            runner.exit_code  # noqa: B018


def test_runner_factory_fixture_uses_the_tests_registry(
        kopf_runner: object, kopf_registry: kopf.OperatorRegistry) -> None:
    assert kopf.get_default_registry() is kopf_registry
