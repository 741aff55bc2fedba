"""
List the public interface of the importable ``kopf``, one item a line, for comparing two releases.

Run it with the interpreter of the release to list (it imports whatever ``kopf`` is there)::

    /path/to/venv/bin/python packages/kopf-core/tests/api/listing.py > listing.txt

With a listing file as the argument, the top-level names are taken from it instead of
``kopf.__all__`` (to list the same names of another release, whose ``__all__`` may differ).

The items (each line is one; sorted):

* ``kopf.NAME`` -- a name in ``kopf.__all__``, or one of the few reachable others;
* ``kopf.on.NAME`` -- a public name of ``kopf.on``;
* ``kopf.NAME(PARAM)``, ``kopf.on.NAME(PARAM)`` -- a parameter of a public function or class
  (its constructor), by name: users pass them as keywords;
* ``kopf.NAME.ATTR`` -- a public attribute of a public class (methods, fields, enum members);
* ``settings.GROUP.FIELD`` -- a field of ``kopf.OperatorSettings()``;
* ``kopf.testing.KopfRunner(PARAM)`` and ``kopf.testing.KopfRunner.ATTR``.

A name whose add-on package is not installed (``ImportError``) is listed alone, without its
parameters or attributes: they cannot be known then.
"""
import dataclasses
import enum
import inspect
import sys
from typing import Any, Iterator, Optional

EXTRA_NAMES = ['harmonize_naming', 'adjust_namespace']


def list_interface(names: Optional[list[str]] = None) -> Iterator[str]:
    import kopf
    import kopf.on
    for name in names if names is not None else [*kopf.__all__, *EXTRA_NAMES]:
        try:
            value = getattr(kopf, name)
        except ImportError:
            yield f'kopf.{name}'
            continue
        except AttributeError:
            continue  # absent: not listed
        yield f'kopf.{name}'
        yield from _describe(f'kopf.{name}', value)
    for name in dir(kopf.on):
        value = getattr(kopf.on, name)
        if not name.startswith('_') and getattr(value, '__module__', '').startswith('kopf'):
            yield f'kopf.on.{name}'
            yield from _params(f'kopf.on.{name}', value)
    yield from _settings('settings', kopf.OperatorSettings())
    try:
        from kopf.testing import KopfRunner
    except ImportError:
        return
    yield from _params('kopf.testing.KopfRunner', KopfRunner)
    yield from _attrs('kopf.testing.KopfRunner', KopfRunner)


def _describe(prefix: str, value: Any) -> Iterator[str]:
    if inspect.isclass(value):
        yield from _attrs(prefix, value)
        if not issubclass(value, (enum.Enum, BaseException)) and not _is_protocol(value):
            yield from _params(prefix, value)
    elif callable(value) and not inspect.ismodule(value):
        yield from _params(prefix, value)


def _attrs(prefix: str, cls: type) -> Iterator[str]:
    names = set(dir(cls))
    if dataclasses.is_dataclass(cls):
        names |= {field.name for field in dataclasses.fields(cls)}
    if issubclass(cls, enum.Enum):
        names |= set(cls.__members__)
    for base in [dict, list, str, int, tuple, Exception, enum.Enum]:  # the builtins' own methods: not the API
        if issubclass(cls, base):
            names -= set(dir(base)) - (set(cls.__members__) if issubclass(cls, enum.Enum) else set())
    for name in sorted(names):
        if not name.startswith('_') and name not in ('mro',):
            yield f'{prefix}.{name}'


def _params(prefix: str, fn: Any) -> Iterator[str]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name.startswith('_'):
            continue
        if param.kind == param.POSITIONAL_ONLY:
            continue
        yield f'{prefix}({param.name})'


def _is_protocol(cls: type) -> bool:
    return bool(getattr(cls, '_is_protocol', False))


def _settings(prefix: str, obj: Any) -> Iterator[str]:
    for field in dataclasses.fields(obj):
        if field.name.startswith('_'):
            continue
        value = getattr(obj, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            yield from _settings(f'{prefix}.{field.name}', value)
        else:
            yield f'{prefix}.{field.name}'


def read_top_level_names(path: str) -> list[str]:
    with open(path, encoding='utf-8') as f:
        lines = [line.strip() for line in f if line.strip() and not line.startswith('#')]
    return [line[len('kopf.'):] for line in lines
            if line.startswith('kopf.') and '.' not in line[len('kopf.'):] and '(' not in line]


HEADER = """\
# The public interface of kopf {version} as released, one item a line (see listing.py for the items).
# Generated with that release installed in its own virtual environment (pip install kopf=={version}):
#     VENV/bin/python packages/kopf-core/tests/api/listing.py > packages/kopf-core/tests/api/kopf-{version}.txt
# Do not edit: regenerate.
"""


if __name__ == '__main__':
    import kopf
    names = read_top_level_names(sys.argv[1]) if len(sys.argv) > 1 else None
    if names is None:
        sys.stdout.write(HEADER.format(version=getattr(kopf, '__version__', 'unknown')))
    sys.stdout.write(''.join(f'{line}\n' for line in sorted(set(list_interface(names)))))
