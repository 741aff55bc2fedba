"""
Namespace patterns: which namespaces an operator serves, and which patterns can never match.

A pattern is a namespace's name, a glob (``*``, ``?``, ``[...]``), a negation of
either (``!``-prefixed), or a compiled regexp (matched against the whole name).
"""
from __future__ import annotations

import fnmatch
import re
from typing import Collection, Iterable, Iterator, Optional

from kopf._cogs.structs.references import NamespacePattern


def match_namespace(name: str, pattern: NamespacePattern) -> bool:
    """
    Check a namespace name against a pattern: globs, ``!`` negations, comma lists, or a regexp.

    The first glob is decisive: if it is positive and does not match, nothing
    else is checked; if it is a negation, all namespaces match initially (as
    if preceded by ``*``). Then the rightmost matching glob wins.
    A compiled regexp must match the whole name.
    """
    if isinstance(pattern, re.Pattern):
        return bool(pattern.fullmatch(name))
    items = [item.strip() for item in pattern.split(',') if item.strip()]
    if not items:
        return False
    if not items[0].startswith('!') and not fnmatch.fnmatchcase(name, items[0]):
        return False
    result = True
    for item in items:
        if item.startswith('!'):
            if fnmatch.fnmatchcase(name, item[1:]):
                result = False
        elif fnmatch.fnmatchcase(name, item):
            result = True
    return result


def select_specific_namespaces(patterns: Iterable[NamespacePattern]) -> Collection[str]:
    """The namespaces named exactly (no globs, no negations, no regexps): served without listing."""
    return frozenset(
        pattern for pattern in patterns
        if isinstance(pattern, str) and pattern and not any(char in pattern for char in '*?!,[]')
    )


def iter_namespace_matches(names: Iterable[str], patterns: Collection[NamespacePattern]) -> Iterator[str]:
    """Namespaces (among the known ones) that any of the patterns matches."""
    for name in names:
        if any(match_namespace(name, pattern) for pattern in patterns):
            yield name


# The characters of namespace names (DNS-1123 labels: 1-63 of them, alphanumeric at both ends).
_LABEL_CHARS = frozenset('abcdefghijklmnopqrstuvwxyz0123456789-')
_LABEL_MAX_LENGTH = 63


class NamespacePatternError(ValueError):
    """A namespace pattern that can never match a namespace (a typo, most likely)."""


def check_namespace_patterns(patterns: Iterable[NamespacePattern]) -> None:
    """Refuse the string patterns that can never match a namespace, with what is wrong and what is allowed."""
    for pattern in patterns:
        if isinstance(pattern, re.Pattern):
            continue  # regexps are the user's own business, as in Kopf
        if not isinstance(pattern, str):
            raise NamespacePatternError(f"A namespace pattern must be a string or a compiled regexp, "
                                        f"not {type(pattern).__name__}: {pattern!r}.")
        problem = _find_pattern_problem(pattern)
        if problem is not None:
            raise NamespacePatternError(
                f"The namespace pattern {pattern!r} can never match a namespace: {problem}. "
                f"Namespace names are lowercase letters, digits and '-' (DNS-1123 labels); a pattern is "
                f"a name or a glob with '*', '?', '[...]', '!' in front to exclude, ',' to combine "
                f"(e.g. 'myapp-*,!*-pr-*').")


def _find_pattern_problem(pattern: str) -> Optional[str]:
    globs = [item.strip() for item in pattern.split(',') if item.strip()]
    if not globs:
        return "it is empty"
    for glob in globs:
        problem = _find_glob_problem(glob[1:] if glob.startswith('!') else glob)
        if problem is not None:
            return problem
    return None


def _find_glob_problem(glob: str) -> Optional[str]:
    """What makes the glob (fnmatch's syntax) unable to match any DNS-1123 label, if anything."""
    if not glob:
        return "'!' excludes nothing"
    tokens: list[str] = []  # '*', '?', '[...]', or one literal character
    i = 0
    while i < len(glob):
        if glob[i] == '[':
            end = _find_class_end(glob, i)
            if end is None:
                return "'[' is not closed with ']'"
            tokens.append(glob[i:end + 1])
            i = end + 1
        else:
            tokens.append(glob[i])
            i += 1
    for token in tokens:
        if token.startswith('[') and not any(fnmatch.fnmatchcase(char, token) for char in _LABEL_CHARS):
            return f"{token} matches no character of namespace names"
        if token not in '*?' and not token.startswith('[') and token not in _LABEL_CHARS:
            return f"{token!r} is not allowed in namespace names"
    if tokens[0] == '-' or tokens[-1] == '-':
        return "namespace names neither start nor end with '-'"
    if sum(token != '*' for token in tokens) > _LABEL_MAX_LENGTH:
        return f"namespace names are at most {_LABEL_MAX_LENGTH} characters long"
    return None


def _find_class_end(glob: str, start: int) -> Optional[int]:
    """The index of the ']' closing the character class at ``start``, as fnmatch finds it."""
    i = start + 1
    if i < len(glob) and glob[i] == '!':
        i += 1
    if i < len(glob) and glob[i] == ']':
        i += 1  # a leading ']' is a literal one
    end = glob.find(']', i)
    return end if end >= 0 else None
