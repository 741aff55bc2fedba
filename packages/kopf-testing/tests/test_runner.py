"""
KopfRunner: the ``kopf`` command in a thread of the test.

Inputs: small operator files written to a temporary directory; their own
``@kopf.on.login`` handler points to an address where nothing listens, so no
cluster is needed (nor contacted before the moments these tests check).
Outputs: the runner's exit code, output and exceptions. The real cluster case
is in the integration tests.
"""
import importlib
import pathlib
import sys
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


@pytest.fixture(autouse=True)
def isolated_default_registry(kopf_registry: kopf.OperatorRegistry) -> kopf.OperatorRegistry:
    """The operators' handlers go to a fresh default registry, not to the process-wide one."""
    return kopf_registry


def unreachable_login(**_: object) -> kopf.ConnectionInfo:
    return kopf.ConnectionInfo(server='https://127.0.0.1:9')


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
    path = write_operator(tmp_path, '''
        @kopf.on.startup()
        def started(**_):
            pass
    ''')
    with KopfRunner(['run', '--standalone', '-A', path], timeout=30) as runner:
        with pytest.raises(RuntimeError, match="only after it has exited"):
            runner.exit_code  # noqa: B018


def test_runner_factory_fixture_uses_the_tests_registry(
        kopf_runner: object, kopf_registry: kopf.OperatorRegistry) -> None:
    assert kopf.get_default_registry() is kopf_registry


def test_handlers_of_the_test_run_without_files(isolated_default_registry: kopf.OperatorRegistry) -> None:
    calls = []
    kopf.on.login()(unreachable_login)

    @kopf.on.startup()
    def started(**_: object) -> None:
        calls.append('started')

    with KopfRunner(['run', '--standalone', '-A'], timeout=30) as runner:
        assert calls == ['started']
    assert runner.exit_code == 0
    assert runner.registry is None
    assert kopf.get_default_registry() is isolated_default_registry


def test_handlers_of_the_test_run_with_the_files(
        tmp_path: pathlib.Path, isolated_default_registry: kopf.OperatorRegistry,
) -> None:
    calls = []

    @kopf.on.startup()
    def started(**_: object) -> None:
        calls.append('started by the test')

    path = write_operator(tmp_path, '''
        @kopf.on.startup()
        def started(logger, **_):
            logger.info("Started by the file.")
    ''')
    with KopfRunner(['run', '--standalone', '-A', path], timeout=30) as runner:
        assert calls == ['started by the test']
    assert "Started by the file." in runner.stdout


def test_the_default_registry_is_restored_after_the_run(
        tmp_path: pathlib.Path, isolated_default_registry: kopf.OperatorRegistry,
) -> None:
    path = write_operator(tmp_path, '''
        @kopf.on.startup()
        def started(**_):
            assert kopf.get_default_registry() is not None
    ''')
    registry = kopf.OperatorRegistry()
    with KopfRunner(['run', '--standalone', '-A', path], registry=registry, timeout=30) as runner:
        pass
    assert runner.exit_code == 0
    assert kopf.get_default_registry() is isolated_default_registry
    assert runner.registry is registry


def test_nothing_registered_is_reported(isolated_default_registry: kopf.OperatorRegistry) -> None:
    with KopfRunner(['run', '--standalone', '-A'], timeout=30, reraise=False) as runner:
        pass
    assert runner.exit_code == 1
    assert "No handlers are registered: nothing to run." in runner.output
    assert isinstance(runner.exception, SystemExit)
    assert runner.exc_info[0] is SystemExit


def test_the_documented_arguments_and_properties(tmp_path: pathlib.Path) -> None:
    path = write_operator(tmp_path, '''
        @kopf.on.startup()
        def started(logger, **_):
            print("Printed by the operator.")
            logger.info("Logged by the operator.")
    ''')
    settings = kopf.OperatorSettings()
    args = ['run', '--standalone', '-A', path]
    with KopfRunner(args, reraise=False, timeout=30, settings=settings, env={'KOPF_RUN_PRIORITY': '5'}) as runner:
        assert not runner.future.done()
    assert (runner.args, runner.kwargs) == ((args,), {'env': {'KOPF_RUN_PRIORITY': '5'}})
    assert (runner.reraise, runner.timeout, runner.settings) == (False, 30, settings)
    assert runner.future.done()
    assert runner.future.result().exit_code == runner.exit_code == 0
    assert runner.exception is None and runner.exc_info is not None
    assert runner.stdout_bytes == b"Printed by the operator.\n"  # print() goes to stdout, the log to stderr
    assert b"Logged by the operator." in runner.stderr_bytes
    assert "Printed by the operator." in runner.output
    assert "Logged by the operator." in runner.output
    assert "Logged by the operator." in runner.stderr


def test_an_already_imported_module_runs_its_handlers(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / 'preimported_operator.py').write_text(LOGIN + textwrap.dedent('''
        CALLS = []

        @kopf.on.startup()
        def started(**_):
            CALLS.append('started')
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module('preimported_operator')  # as a test module importing the operator does
    try:
        with KopfRunner(['run', '--standalone', '-A', '-m', 'preimported_operator'], timeout=30) as runner:
            assert module.CALLS == ['started']  # once: the import is not repeated, the handlers are not doubled
        assert runner.exit_code == 0
    finally:
        sys.modules.pop('preimported_operator', None)
