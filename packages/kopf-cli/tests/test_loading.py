"""
Loading of the operator's code by ``kopf run``: files by paths, modules by names.

Real files in a temporary directory are imported for real; ``kopf.run`` and
``kopf.configure`` are recorders (see conftest). Imported modules are removed
from ``sys.modules`` after every test.
"""
import sys
from typing import Any

import pytest
from click.testing import CliRunner

import kopf
from kopf_cli import CLIControls
from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_configure', 'kopf_run')


def test_files_are_imported(runner: CliRunner, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    assert sys.modules['handlers'].LOADED is True


def test_files_can_import_their_siblings(runner: CliRunner, tmp_path: Any, handler_code: str) -> None:
    (tmp_path / 'sibling_helpers.py').write_text("VALUE = 123\n")
    (tmp_path / 'main_file.py').write_text(handler_code + "from sibling_helpers import VALUE\nLOADED = VALUE\n")
    result = runner.invoke(main, ['run', str(tmp_path / 'main_file.py')])
    assert result.exit_code == 0, result.output
    assert sys.modules['main_file'].LOADED == 123


def test_files_with_the_same_name_are_all_imported(runner: CliRunner, tmp_path: Any, handler_code: str) -> None:
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    (tmp_path / 'a' / 'handlers.py').write_text(handler_code + "LOADED = 'a'\n")
    (tmp_path / 'b' / 'handlers.py').write_text("LOADED = 'b'\n")
    result = runner.invoke(main, ['run', str(tmp_path / 'a' / 'handlers.py'), str(tmp_path / 'b' / 'handlers.py')])
    assert result.exit_code == 0, result.output
    assert sys.modules['handlers'].LOADED == 'a'
    assert sys.modules['handlers_2'].LOADED == 'b'


def test_same_file_is_imported_again_on_every_run(runner: CliRunner, tmp_path: Any) -> None:
    path = tmp_path / 'counter.py'
    path.write_text("import builtins\nbuiltins.__dict__.setdefault('_kopf_test_runs', []).append(1)\n")
    try:
        runner.invoke(main, ['run', str(path)])
        runner.invoke(main, ['run', str(path)])
        import builtins
        assert builtins.__dict__['_kopf_test_runs'] == [1, 1]
        assert 'counter_2' not in sys.modules
    finally:
        import builtins
        builtins.__dict__.pop('_kopf_test_runs', None)


def test_modules_are_imported_by_name(
        runner: CliRunner, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, handler_code: str,
) -> None:
    (tmp_path / 'mypackage').mkdir()
    (tmp_path / 'mypackage' / '__init__.py').write_text("")
    (tmp_path / 'mypackage' / 'mymodule.py').write_text(handler_code + "LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = runner.invoke(main, ['run', '-m', 'mypackage.mymodule'])
    assert result.exit_code == 0, result.output
    assert sys.modules['mypackage.mymodule'].LOADED is True


def test_modules_are_imported_from_the_current_directory(
        runner: CliRunner, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, handler_code: str,
) -> None:
    (tmp_path / 'cwd_module.py').write_text(handler_code + "LOADED = True\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ['run', '--module', 'cwd_module'])
    assert result.exit_code == 0, result.output
    assert sys.modules['cwd_module'].LOADED is True


def test_files_and_modules_are_all_imported(
        runner: CliRunner, operator_file: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / 'other_module.py').write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = runner.invoke(main, ['run', operator_file, '-m', 'other_module'])
    assert result.exit_code == 0, result.output
    assert sys.modules['handlers'].LOADED is True
    assert sys.modules['other_module'].LOADED is True


def test_no_handlers_at_all_is_an_error(runner: CliRunner, kopf_run: Any, tmp_path: Any) -> None:
    path = tmp_path / 'empty.py'
    path.write_text("import kopf\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: No handlers are registered: nothing to run.")
    assert len(result.output.strip().splitlines()) == 1
    assert kopf_run.calls == []


def test_nothing_given_and_nothing_registered_is_an_error(runner: CliRunner, kopf_run: Any) -> None:
    result = runner.invoke(main, ['run'])
    assert result.exit_code == 1
    assert "No handlers are registered" in result.output
    assert kopf_run.calls == []


def test_nothing_given_runs_the_handlers_registered_already(
        runner: CliRunner, kopf_run: Any, default_registry: kopf.OperatorRegistry,
) -> None:
    kopf.on.startup()(lambda **_: None)  # as a test module or an imported module would do
    result = runner.invoke(main, ['run'])
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['registry'] is None  # i.e. the default one, which has the handler


def test_nothing_given_runs_the_handlers_of_the_given_registry(
        runner: CliRunner, kopf_run: Any, registry_with_a_handler: kopf.OperatorRegistry,
) -> None:
    registry = registry_with_a_handler
    result = runner.invoke(main, ['run'], obj=CLIControls(registry=registry))
    assert result.exit_code == 0, result.output
    assert kopf_run.kwargs['registry'] is registry


def test_login_handlers_alone_are_nothing_to_run(runner: CliRunner, kopf_run: Any) -> None:
    kopf.on.login()(lambda **_: None)
    result = runner.invoke(main, ['run'])
    assert result.exit_code == 1
    assert "No handlers are registered" in result.output


def test_absent_files_are_a_usage_error(runner: CliRunner, kopf_run: Any, tmp_path: Any) -> None:
    result = runner.invoke(main, ['run', str(tmp_path / 'absent.py')])
    assert result.exit_code == 2
    assert "absent.py' does not exist" in result.output
    assert kopf_run.calls == []


def test_failing_files_are_reported_with_the_error_and_the_line(
        runner: CliRunner, kopf_run: Any, tmp_path: Any,
) -> None:
    path = tmp_path / 'broken.py'
    path.write_text("import os\n\nraise RuntimeError('bad config')\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: Failed to load {path}: RuntimeError: bad config\n"
        f"  File \"{path}\", line 3, in <module>\n"
        f"    raise RuntimeError('bad config')\n"
    )
    assert kopf_run.calls == []


def test_syntax_errors_are_reported_with_the_line(runner: CliRunner, kopf_run: Any, tmp_path: Any) -> None:
    path = tmp_path / 'broken.py'
    path.write_text("x = 1\ndef fn(:\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 1
    assert f"Error: Failed to load {path}: SyntaxError:" in result.output
    assert f"  File \"{path}\", line 2\n    def fn(:\n" in result.output
    assert "Traceback" not in result.output


def test_errors_in_nested_imports_point_to_the_failing_line(
        runner: CliRunner, kopf_run: Any, tmp_path: Any,
) -> None:
    (tmp_path / 'nested_dependency.py').write_text("value = {}['missing']\n")
    path = tmp_path / 'main_file.py'
    path.write_text("import nested_dependency\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 1
    assert f"Error: Failed to load {path}: KeyError: 'missing'\n" in result.output
    assert f"  File \"{tmp_path / 'nested_dependency.py'}\", line 1, in <module>\n" in result.output


def test_failing_modules_are_reported_with_the_error(runner: CliRunner, kopf_run: Any) -> None:
    result = runner.invoke(main, ['run', '-m', 'no_such_module_anywhere'])
    assert result.exit_code == 1
    assert ("Error: Failed to load no_such_module_anywhere: "
            "ModuleNotFoundError: No module named 'no_such_module_anywhere'") in result.output
    assert "Traceback" not in result.output
    assert kopf_run.calls == []


def test_admission_handlers_alone_are_something_to_run(runner: CliRunner, kopf_run: Any) -> None:
    kopf.on.validate('kopfexamples')(lambda **_: None)
    result = runner.invoke(main, ['run'])
    assert result.exit_code == 0, result.output
    assert len(kopf_run.calls) == 1


def test_errors_in_nested_imports_show_the_users_frames_only(
        runner: CliRunner, kopf_run: Any, tmp_path: Any,
) -> None:
    (tmp_path / 'nested_dependency.py').write_text("def load():\n    return {}['missing']\n\nVALUE = load()\n")
    path = tmp_path / 'main_file.py'
    path.write_text("import nested_dependency\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: Failed to load {path}: KeyError: 'missing'\n"
        f"  File \"{path}\", line 1, in <module>\n"
        f"    import nested_dependency\n"
        f"  File \"{tmp_path / 'nested_dependency.py'}\", line 4, in <module>\n"
        f"    VALUE = load()\n"
        f"  File \"{tmp_path / 'nested_dependency.py'}\", line 2, in load\n"
        f"    return {{}}['missing']\n"
    )


def test_deep_tracebacks_are_shortened_in_the_middle(runner: CliRunner, kopf_run: Any, tmp_path: Any) -> None:
    path = tmp_path / 'recursive.py'
    path.write_text("def dive(n):\n    return dive(n - 1) if n else 1 / 0\n\ndive(20)\n")
    result = runner.invoke(main, ['run', str(path)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"Error: Failed to load {path}: ZeroDivisionError: division by zero"
    assert lines.count("  ... 12 more frames ...") == 1
    assert len([line for line in lines if line.startswith('  File ')]) == 10
    assert lines[-1] == "    return dive(n - 1) if n else 1 / 0"
