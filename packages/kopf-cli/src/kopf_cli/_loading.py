"""
Loading of the operator's code: Python files by their paths, modules by their names.

It mimics the Python interpreter: ``kopf run handlers.py`` is like
``python handlers.py`` (the file's directory is importable, so the file can
import its sibling modules), ``kopf run -m package.module`` is like
``python -m package.module``. The handlers are registered as a side effect
of importing, by the decorators.

A file that fails to import is reported in one message with the error and the
line where it happened, not with the framework's own frames of a traceback:
the problem is in the operator's code, and that is where the user should look.
"""
from __future__ import annotations

import importlib
import importlib.util
import os.path
import sys
import traceback
import types
from typing import Any, Iterable, List, Optional

import click

import kopf

# The frames of the importing machinery: not interesting for the user.
_OWN_FILES = frozenset({__file__, importlib.__file__})


class LoadingError(click.ClickException):
    """The operator's code cannot be imported; the message says where and why."""


class NoHandlersError(click.ClickException):
    """The operator's code is loaded, but it has registered no handlers."""


# The activities that make an operator worth running even without resource handlers
# (unlike the login handlers, which only serve the others).
_OPERATOR_ACTIVITIES = ('startup', 'cleanup', 'probe')


def preload(*, paths: Iterable[str], modules: Iterable[str]) -> List[types.ModuleType]:
    """Import the files and the modules, in this order, failing on the first one that fails."""
    loaded: List[types.ModuleType] = []
    for path in paths:
        loaded.append(_import_path(path))
    for name in modules:
        loaded.append(_import_name(name))
    return loaded


def check_handlers(registry: kopf.OperatorRegistry) -> None:
    """
    Fail if there is nothing to run: no handlers were registered by the code loaded, nor before.

    Without the files or modules given, ``kopf run`` runs what is registered
    already (e.g. by the test module that runs it in-process): an empty
    registry means the operator would sit idle forever, most likely because
    of a mistyped command, so it is an error rather than a quiet start.
    """
    activities: Any = _OPERATOR_ACTIVITIES  # values of a str-enum that is not a public name
    if registry.selectors or registry.has_webhook_handlers():
        return
    if any(registry.has_activity_handlers(activity=activity) for activity in activities):
        return
    raise NoHandlersError("No handlers are registered: nothing to run. Pass the operator's files "
                          "(kopf run handlers.py) or modules (kopf run -m package.module) "
                          "with the handlers decorated by @kopf.on...")


def _import_path(path: str) -> types.ModuleType:
    abspath = os.path.abspath(path)
    dirname = os.path.dirname(abspath)
    if dirname not in sys.path:
        sys.path.insert(0, dirname)  # like "python file.py": the siblings become importable.

    name = _make_module_name(abspath)
    spec = importlib.util.spec_from_file_location(name, abspath)
    if spec is None or spec.loader is None:
        raise LoadingError(f"Failed to load {path}: not an importable Python file.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as the import system does, for the module to see itself (e.g. pickling).
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise LoadingError(f"Failed to load {path}: {_describe(exc)}") from exc
    return module


def _import_name(name: str) -> types.ModuleType:
    if '' not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, '')  # like "python -m": the current directory is importable.
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise LoadingError(f"Failed to load {name}: {_describe(exc)}") from exc


def _make_module_name(abspath: str) -> str:
    """
    The file's name as a module name, unique for different files with the same name.

    The same file gets the same name every time: loading it again (e.g. when
    operators are started several times in the same process, as in tests)
    replaces the previous module and registers the handlers again.
    """
    stem = os.path.splitext(os.path.basename(abspath))[0]
    base = ''.join(char if char.isalnum() or char == '_' else '_' for char in stem) or '_'
    name, index = base, 1
    while name in sys.modules and not _is_same_file(sys.modules[name], abspath):
        index += 1
        name = f'{base}_{index}'
    return name


def _is_same_file(module: types.ModuleType, abspath: str) -> bool:
    filename: Optional[str] = getattr(module, '__file__', None)
    return filename is not None and os.path.abspath(filename) == abspath


def _describe(exc: BaseException) -> str:
    """
    The error and the user's traceback: the frames from the operator's file down to the failing line.

    The frames of the importing machinery are left out: they are the same for
    every failure and hide where the problem is. So are the middle ones of
    very deep tracebacks (e.g. in a recursion), to keep the message readable.
    """
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SyntaxError) and exc.filename:
        # The line is not a frame in the traceback, but in the exception itself.
        return f"{text}\n" + _format_location(exc.filename, exc.lineno, None, exc.text)
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if not frame.filename.startswith('<frozen ') and frame.filename not in _OWN_FILES]
    lines = [_format_location(frame.filename, frame.lineno, frame.name, frame.line) for frame in frames]
    if len(lines) > _MAX_FRAMES:
        skipped = len(lines) - _MAX_FRAMES
        lines = [*lines[:_MAX_FRAMES // 2], f"  ... {skipped} more frames ...", *lines[-(_MAX_FRAMES // 2):]]
    return '\n'.join([text, *lines])


_MAX_FRAMES = 10


def _format_location(filename: str, lineno: Optional[int], name: Optional[str], line: Optional[str]) -> str:
    location = f'  File "{filename}", line {lineno}' + (f', in {name}' if name else '')
    code = (line or '').strip()
    return location + (f"\n    {code}" if code else '')
