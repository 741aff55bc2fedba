"""
Namespace patterns that can never match a namespace are refused; the valid ones (Kopf's syntax) are not.

Namespace names are DNS-1123 labels: lowercase letters, digits and '-', 1-63 of them,
alphanumeric at both ends. A pattern is a comma-separated list of globs (``*``, ``?``,
``[...]``), each possibly negated with a leading ``!``; or a compiled regexp (as in Kopf).
"""
import re
from typing import Any

import pytest

import kopf
from kopf._cogs.structs.namespaces import (
    NamespacePatternError,
    check_namespace_patterns,
    iter_namespace_matches,
    match_namespace,
    select_specific_namespaces,
)
from kopf._core.reactor.options import OperatorOptions


@pytest.mark.parametrize('pattern', [
    'default', 'kube-system', 'ns1', 'a', 'a' * 63, '*', '?', 'myapp-*', '*-pr-123-*', '!*-pr-123-*',
    'myapp-*,!*-pr-*,*-pr-123', 'myapp-*, !*-pr-*', 'ns[0-9]', 'ns[!0-9]', 'ns[]a]', '[a-z]*', 'x-*-y',
    'x,', ' ns1 ', '*' * 100, 'a*-*b',
])
def test_valid_patterns_are_accepted(pattern: str) -> None:
    check_namespace_patterns([pattern])


@pytest.mark.parametrize('pattern, problem', [
    pytest.param('Bad_NS!', "'B' is not allowed in namespace names", id='uppercase-underscore-bang'),
    pytest.param('Default', "'D' is not allowed", id='uppercase'),
    pytest.param('my_ns', "'_' is not allowed", id='underscore'),
    pytest.param('my.ns', "'.' is not allowed", id='dot'),
    pytest.param('ns!', "'!' is not allowed", id='bang-inside'),
    pytest.param('!!ns', "'!' is not allowed", id='double-negation'),
    pytest.param('[', "'[' is not closed with ']'", id='unclosed-bracket'),
    pytest.param('ns[0-9', "'[' is not closed with ']'", id='unclosed-class'),
    pytest.param('ns[A-Z]', "[A-Z] matches no character of namespace names", id='uppercase-class'),
    pytest.param('ns]', "']' is not allowed", id='stray-bracket'),
    pytest.param('-ns', "namespace names neither start nor end with '-'", id='leading-dash'),
    pytest.param('ns-', "namespace names neither start nor end with '-'", id='trailing-dash'),
    pytest.param('-*', "namespace names neither start nor end with '-'", id='leading-dash-glob'),
    pytest.param('*-', "namespace names neither start nor end with '-'", id='trailing-dash-glob'),
    pytest.param('a' * 64, "namespace names are at most 63 characters long", id='too-long'),
    pytest.param('?' * 64, "namespace names are at most 63 characters long", id='too-long-placeholders'),
    pytest.param('', "it is empty", id='empty'),
    pytest.param(' , ', "it is empty", id='only-commas'),
    pytest.param('!', "'!' excludes nothing", id='bare-negation'),
    pytest.param('myapp-*,!Bad', "'B' is not allowed", id='bad-negation-in-a-list'),
    pytest.param('ns 1', "' ' is not allowed", id='space-inside'),
])
def test_patterns_that_never_match_are_refused_in_one_clear_message(pattern: str, problem: str) -> None:
    with pytest.raises(NamespacePatternError) as err:
        check_namespace_patterns(['default', pattern])
    message = str(err.value)
    assert message.startswith(f"The namespace pattern {pattern!r} can never match a namespace: {problem}")
    assert "DNS-1123" in message
    assert "'*', '?', '[...]'" in message
    assert isinstance(err.value, ValueError)


def test_regexps_are_not_checked_and_match_the_whole_name() -> None:
    pattern = re.compile(r'team-\d+')
    check_namespace_patterns([pattern, re.compile('Anything_At_All')])
    assert match_namespace('team-12', pattern)
    assert not match_namespace('team-12-x', pattern)
    assert not match_namespace('my-team-12', pattern)
    assert list(iter_namespace_matches(['team-1', 'team-x', 'other'], [pattern, 'other'])) == ['team-1', 'other']


def test_regexps_are_not_specific_namespaces() -> None:
    assert select_specific_namespaces([re.compile('ns1'), 'ns2', 'ns*']) == {'ns2'}


def test_other_types_are_refused() -> None:
    with pytest.raises(NamespacePatternError, match=r"must be a string or a compiled regexp, not int"):
        check_namespace_patterns([123])  # type: ignore[list-item]


@pytest.mark.parametrize('kwargs', [
    pytest.param({'namespaces': ['ns1', 'Bad_NS!']}, id='namespaces'),
    pytest.param({'namespace': '['}, id='namespace'),
])
def test_the_operators_options_refuse_them(kwargs: Any) -> None:
    with pytest.raises(NamespacePatternError, match=r"can never match a namespace"):
        OperatorOptions(**kwargs)


def test_kopf_run_refuses_them_at_the_call() -> None:
    # At the call itself, before any event loop or cluster: nothing has started yet.
    with pytest.raises(ValueError, match=r"The namespace pattern 'Bad_NS!' can never match a namespace"):
        kopf.run(namespaces=['Bad_NS!'])


@pytest.mark.parametrize('fn', [kopf.operator, kopf.spawn_tasks])
async def test_kopf_operator_and_spawn_tasks_refuse_them_before_starting(fn: Any) -> None:
    with pytest.raises(ValueError, match=r"The namespace pattern 'Bad_NS!' can never match a namespace"):
        await fn(namespaces=['Bad_NS!'], registry=kopf.OperatorRegistry())


def test_embedding_accepts_valid_patterns_and_regexps() -> None:
    options = OperatorOptions(namespaces=['myapp-*,!*-pr-*', re.compile('team-.*')], namespace='ns1')
    assert len(options.all_namespaces) == 3
