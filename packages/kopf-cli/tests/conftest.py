"""
Fixtures for the command line's tests.

The commands run in-process via click's ``CliRunner``. The operator itself is
never started: ``kopf.run`` (and ``kopf.configure``, which would change the
process-wide logging) are replaced by recorders of their arguments, since the
command line's job is to translate the options into these calls.
"""
import sys
from typing import Any, Dict, Iterator, List

import pytest
from click.testing import CliRunner

import kopf


class Recorder:
    """Records the keyword arguments of every call; optionally runs a side effect."""

    def __init__(self) -> None:
        self.calls: List[Dict[str, Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(dict(kwargs, _args=args))

    @property
    def kwargs(self) -> Dict[str, Any]:
        assert len(self.calls) == 1, f"Expected one call, got {len(self.calls)}."
        return self.calls[0]


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture()
def kopf_run(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(kopf, 'run', recorder, raising=False)
    return recorder


@pytest.fixture()
def kopf_configure(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(kopf, 'configure', recorder, raising=False)
    return recorder


@pytest.fixture()
def kopf_set_default_registry(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(kopf, 'set_default_registry', recorder, raising=False)
    return recorder


@pytest.fixture(autouse=True)
def isolated_imports() -> Iterator[None]:
    """Undo the operators' imports: the same names are reused by different tests."""
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def default_registry() -> Iterator[kopf.OperatorRegistry]:
    """A fresh default registry for every test: the operators' handlers go there, not to the global one."""
    previous = kopf.get_default_registry()
    registry = kopf.OperatorRegistry()
    kopf.set_default_registry(registry)
    yield registry
    kopf.set_default_registry(previous)


@pytest.fixture()
def handler_code() -> str:
    """The code of an operator that has something to run (the commands refuse to run nothing)."""
    return "import kopf\nkopf.on.startup()(lambda **_: None)\n"


@pytest.fixture()
def registry_with_a_handler() -> kopf.OperatorRegistry:
    """A registry with something to run: the commands refuse to run nothing."""
    registry = kopf.OperatorRegistry()
    kopf.on.startup(registry=registry)(lambda **_: None)
    return registry


@pytest.fixture()
def operator_file(tmp_path: Any) -> str:
    path = tmp_path / 'handlers.py'
    path.write_text("import kopf\n\n@kopf.on.startup()\ndef started(**_):\n    pass\n\nLOADED = True\n")
    return str(path)
