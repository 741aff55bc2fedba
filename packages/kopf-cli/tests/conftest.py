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


@pytest.fixture()
def operator_file(tmp_path: Any) -> str:
    path = tmp_path / 'handlers.py'
    path.write_text("LOADED = True\n")
    return str(path)
