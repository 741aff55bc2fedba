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

from kopf_cli.main import main

pytestmark = pytest.mark.usefixtures('kopf_configure', 'kopf_run')


def test_files_are_imported(runner: CliRunner, operator_file: str) -> None:
    result = runner.invoke(main, ['run', operator_file])
    assert result.exit_code == 0, result.output
    assert sys.modules['handlers'].LOADED is True


def test_files_can_import_their_siblings(runner: CliRunner, tmp_path: Any) -> None:
    (tmp_path / 'sibling_helpers.py').write_text("VALUE = 123\n")
    (tmp_path / 'main_file.py').write_text("from sibling_helpers import VALUE\nLOADED = VALUE\n")
    result = runner.invoke(main, ['run', str(tmp_path / 'main_file.py')])
    assert result.exit_code == 0, result.output
    assert sys.modules['main_file'].LOADED == 123


def test_files_with_the_same_name_are_all_imported(runner: CliRunner, tmp_path: Any) -> None:
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    (tmp_path / 'a' / 'handlers.py').write_text("LOADED = 'a'\n")
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


def test_modules_are_imported_by_name(runner: CliRunner, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'mypackage').mkdir()
    (tmp_path / 'mypackage' / '__init__.py').write_text("")
    (tmp_path / 'mypackage' / 'mymodule.py').write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = runner.invoke(main, ['run', '-m', 'mypackage.mymodule'])
    assert result.exit_code == 0, result.output
    assert sys.modules['mypackage.mymodule'].LOADED is True


def test_modules_are_imported_from_the_current_directory(
        runner: CliRunner, tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / 'cwd_module.py').write_text("LOADED = True\n")
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


def test_nothing_to_run_is_a_usage_error(runner: CliRunner, kopf_run: Any) -> None:
    result = runner.invoke(main, ['run'])
    assert result.exit_code == 2
    assert "Nothing to run: pass the operator's Python files" in result.output
    assert kopf_run.calls == []


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
