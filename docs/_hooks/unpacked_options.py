"""
The decorators' keyword options in the API reference, one by one (a griffe extension).

The decorators declare their options as ``**options: Unpack[SomeOptions]``, a TypedDict
built from small bundles (``kopf._core.intents.decoration``). A reader of the reference
cannot look that TypedDict up: it is internal. Here, every such ``**options`` becomes the
keyword-only parameters that the decorator accepts at runtime (``keyword_options()`` does
the same to its ``__signature__``): each with its type, ``None`` by default unless required,
and a line in the docstring's parameters with the meaning, which is the docstring written
under the option in its bundle. mkdocstrings then renders the signature and the table of
the parameters as it does for any function.

The fields are collected as the TypedDict's metaclass collects its ``__annotations__``: the
bases' fields first, left to right, then the class's own; a field's requiredness comes from
the ``total=`` of the class that declares it (or ``Required[...]``/``NotRequired[...]``).
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Optional, Union

import griffe

log = logging.getLogger('mkdocs.plugins.unpacked_options')

_UNPACK = {'typing.Unpack', 'typing_extensions.Unpack'}
_REQUIRED = {'typing.Required', 'typing_extensions.Required'}
_NOT_REQUIRED = {'typing.NotRequired', 'typing_extensions.NotRequired'}


@dataclasses.dataclass(frozen=True)
class Option:
    name: str
    annotation: Union[str, griffe.Expr, None]
    required: bool
    meaning: str


class UnpackedOptions(griffe.Extension):

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for function in _functions(pkg):
            _expand(function)


def _functions(obj: griffe.Object) -> list[griffe.Function]:
    """The functions defined in the object and in its members, recursively (not the imported ones)."""
    found: list[griffe.Function] = []
    for member in obj.members.values():
        if member.is_alias:
            continue
        if isinstance(member, griffe.Function):
            found.append(member)
        elif isinstance(member, (griffe.Module, griffe.Class)):
            found.extend(_functions(member))
    return found


def _expand(function: griffe.Function) -> None:
    variadic = next((p for p in function.parameters if p.kind is griffe.ParameterKind.var_keyword), None)
    annotation = variadic.annotation if variadic is not None else None
    if variadic is None or not isinstance(annotation, griffe.ExprSubscript) or annotation.canonical_path not in _UNPACK:
        return
    typed_dict = _lookup(function, annotation.slice)
    if typed_dict is None:
        log.warning(f"{function.path}: cannot find the options of **{variadic.name}: {annotation}")
        return
    options = _options(typed_dict)
    del function.parameters[variadic.name]
    for option in options:
        function.parameters[option.name] = griffe.Parameter(
            option.name, annotation=option.annotation, kind=griffe.ParameterKind.keyword_only,
            default=None if option.required else 'None')
    fields = '\n'.join(f":param {option.name}: {option.meaning}" for option in options)
    if function.docstring is None:
        function.docstring = griffe.Docstring(fields, parent=function)
    else:
        function.docstring.value = f"{function.docstring.value.rstrip()}\n\n{fields}"


def _lookup(function: griffe.Function, expr: Union[str, griffe.Expr]) -> Optional[griffe.Class]:
    path = expr if isinstance(expr, str) else expr.canonical_path
    try:
        found = function.modules_collection[path]
        target = found.final_target if isinstance(found, griffe.Alias) else found
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return target if isinstance(target, griffe.Class) else None


def _options(cls: griffe.Class) -> list[Option]:
    options: dict[str, Option] = {}
    for base in cls.resolved_bases:
        if isinstance(base, griffe.Class):
            options.update((option.name, option) for option in _options(base))
    total = str(cls.keywords.get('total', 'True')) != 'False'
    for member in cls.members.values():
        if isinstance(member, griffe.Attribute) and member.annotation is not None:
            annotation, required = _unwrap(member.annotation, required=total)
            meaning = ' '.join(member.docstring.value.split()) if member.docstring else ''
            options[member.name] = Option(member.name, annotation, required, meaning)
    return list(options.values())


def _unwrap(annotation: Union[str, griffe.Expr], *, required: bool) -> tuple[Union[str, griffe.Expr], bool]:
    """The field's type without ``Required[...]``/``NotRequired[...]``, and whether it is required."""
    if isinstance(annotation, griffe.ExprSubscript):
        if annotation.canonical_path in _REQUIRED:
            return annotation.slice, True
        if annotation.canonical_path in _NOT_REQUIRED:
            return annotation.slice, False
    return annotation, required

