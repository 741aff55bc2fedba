"""The combinators of filter callbacks: kopf.not_/all_/any_/none_, with Python's built-in semantics."""
from typing import Any, Callable, List

import pytest

from kopf._core.intents.callbacks import all_, any_, none_, not_


def true_fn(*_: Any, **__: Any) -> bool:
    return True


def false_fn(*_: Any, **__: Any) -> bool:
    return False


@pytest.mark.parametrize('fn, expected', [
    pytest.param(true_fn, False, id='true'),
    pytest.param(false_fn, True, id='false'),
])
def test_not_inverts_the_result(fn: Callable[..., bool], expected: bool) -> None:
    assert not_(fn)() is expected


@pytest.mark.parametrize('combinator, fns, expected', [
    pytest.param(all_, [true_fn, true_fn], True, id='all-true'),
    pytest.param(all_, [true_fn, false_fn], False, id='all-some-false'),
    pytest.param(all_, [], True, id='all-empty'),
    pytest.param(any_, [false_fn, true_fn], True, id='any-some-true'),
    pytest.param(any_, [false_fn, false_fn], False, id='any-all-false'),
    pytest.param(any_, [], False, id='any-empty'),
    pytest.param(none_, [false_fn, false_fn], True, id='none-all-false'),
    pytest.param(none_, [false_fn, true_fn], False, id='none-some-true'),
    pytest.param(none_, [], True, id='none-empty'),
])
def test_combinators_follow_the_builtin_semantics(
        combinator: Callable[[Any], Callable[..., bool]], fns: List[Callable[..., bool]], expected: bool,
) -> None:
    assert combinator(fns)() is expected


@pytest.mark.parametrize('combinator', [not_, all_, any_, none_])
def test_positional_values_and_kwargs_are_passed_through(combinator: Callable[[Any], Callable[..., bool]]) -> None:
    calls: List[Any] = []

    def fn(value: Any, /, **kwargs: Any) -> bool:
        calls.append((value, kwargs))
        return False

    combinator(fn if combinator is not_ else [fn])('v', spec={'x': 1})
    assert calls == [('v', {'spec': {'x': 1}})]


def test_combinators_accept_any_iterable_and_can_be_called_repeatedly() -> None:
    combined = all_(fn for fn in [true_fn, true_fn])
    assert combined() is True
    assert combined() is True
