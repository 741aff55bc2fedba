"""
The Sphinx roles of the docstrings as code and cross-references in the API reference (a griffe extension).

The docstrings are written for Sphinx: ``:class:`LoginError```, ``:func:`~kopf.event```,
``:meth:`Title <ObjectReader.list_objects>```. mkdocstrings' Sphinx-style parser reads their
fields (``:param x:``), but leaves the roles in the text, where Markdown makes them a literal
``:class:`` before a code span. Here, before any docstring is parsed, every role becomes its
title as code, wrapped in an optional cross-reference to the object it names: the name is
resolved in the scope of the documented object (as Sphinx does), and where that object is
rendered on the site, mkdocs-autorefs makes it a link; where it is not (an internal or
a standard library name), the code stays as it is, without a warning.
"""
from __future__ import annotations

import html
import re
from typing import Any

import griffe

# A role: an optional domain (py:), the role's name, and its content in backticks.
_ROLE = re.compile(r'(?<![\w`]):(?:py:)?(?P<role>[a-z]+):`(?P<content>[^`]+)`')
# The roles that name Python objects; the others (:ref:, :term:, ...) become plain code.
_OBJECT_ROLES = {'mod', 'class', 'func', 'meth', 'data', 'attr', 'exc', 'obj', 'const'}


class SphinxRoles(griffe.Extension):

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _documented(pkg):
            if obj.docstring is not None and _ROLE.search(obj.docstring.value):
                obj.docstring.value = convert_roles(obj.docstring.value, obj)


def _documented(obj: griffe.Object) -> list[griffe.Object]:
    """The object and everything defined in it, recursively (not the imported names)."""
    found: list[griffe.Object] = [obj]
    for member in obj.members.values():
        if not isinstance(member, griffe.Alias):
            found.extend(_documented(member))
    return found


def convert_roles(text: str, scope: griffe.Object) -> str:
    """The text with each role as Markdown and HTML that mkdocs-autorefs understands."""
    def replace(match: re.Match[str]) -> str:
        title, target, linked = _parse(match['content'])
        code = f"<code>{html.escape(title)}</code>"
        if not linked or match['role'] not in _OBJECT_ROLES:
            return code
        identifier = _identifier(target, scope)
        return f'<autoref identifier="{html.escape(identifier)}" optional>{code}</autoref>'
    return _ROLE.sub(replace, text)


def _parse(content: str) -> tuple[str, str, bool]:
    """The title, the target, and whether to link: ``Title <target>``, ``~a.b.c`` (title ``c``), ``!a.b``."""
    explicit = re.fullmatch(r'(?P<title>.*?)\s*<(?P<target>[^<>]+)>', content, flags=re.S)
    if explicit is not None:
        return explicit['title'], explicit['target'].strip(), True
    if content.startswith('!'):
        return content[1:], content[1:], False
    target = content.lstrip('~')
    title = target.rsplit('.', 1)[-1] if content.startswith('~') else target
    return title, target, True


def _identifier(target: str, scope: griffe.Object) -> str:
    """The path of the named object: its first part resolved in the scope, then its canonical path if known."""
    target = target.removesuffix('()')
    head, dot, rest = target.partition('.')
    try:
        path = scope.resolve(head) + dot + rest
    except griffe.NameResolutionError:
        absolute = head in scope.modules_collection.members  # a loaded package's name
        path = target if absolute else _public_path(target, scope) or target
    try:
        found: griffe.Object | griffe.Alias = scope.modules_collection[path]
        return found.canonical_path
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return path  # e.g. in a package not loaded (yet): autorefs knows the public paths too


def _public_path(target: str, scope: griffe.Object) -> str | None:
    """
    The target in a public module of the scope's package (``kopf.clients``, ``kopf``), if there.

    A protocol's docstring names the errors that its implementations raise, which the protocol's
    own module does not import: Sphinx would not resolve them either, but the reader knows
    them from the public module that exports both.
    """
    head, dot, rest = target.partition('.')
    for module in _public_modules(scope.package):
        member = module.members.get(head)
        if isinstance(member, griffe.Alias):
            return member.target_path + dot + rest
        if member is not None:
            return member.path + dot + rest
    return None


def _public_modules(module: griffe.Module) -> list[griffe.Module]:
    """The package and its submodules whose paths have no private part, the deepest first."""
    found = [module] if not any(part.startswith('_') for part in module.path.split('.')) else []
    for member in module.members.values():
        if isinstance(member, griffe.Module):
            found[:0] = _public_modules(member)
    return found
