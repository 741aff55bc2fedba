"""The lifecycles: which of the due handlers run in one cycle, and the default lifecycle."""
import logging
import random
from typing import Any, Dict, Iterator, List, Sequence

import pytest

import kopf
from kopf._core.actions import lifecycles
from kopf._core.actions.progression import HandlerState, State, utcnow
from kopf._core.intents.handlers import BaseHandler, ChangingHandler, HandlerId


def handler(id: str) -> BaseHandler:
    return ChangingHandler(fn=lambda **_: None, id=HandlerId(id), param=None, errors=None, timeout=None,
                           retries=None, backoff=None)


def state_with(retries: Dict[str, int]) -> State:
    return State({HandlerId(hid): HandlerState(started=utcnow(), retries=n) for hid, n in retries.items()})


def ids(handlers: Sequence[BaseHandler]) -> List[str]:
    return [h.id for h in handlers]


HANDLERS = [handler('a'), handler('b'), handler('c')]
STATE = state_with({'a': 2, 'b': 1, 'c': 1})


@pytest.fixture(autouse=True)
def restored_default() -> Iterator[None]:
    yield
    lifecycles._default_lifecycle = None


def test_all_at_once_runs_all_in_the_declared_order() -> None:
    assert ids(lifecycles.all_at_once(HANDLERS, state=STATE)) == ['a', 'b', 'c']


def test_one_by_one_runs_the_first_one_regardless_of_retries() -> None:
    assert ids(lifecycles.one_by_one(HANDLERS, state=STATE)) == ['a']


def test_asap_runs_the_one_with_the_fewest_retries_and_the_first_declared_among_equals() -> None:
    assert ids(lifecycles.asap(HANDLERS, state=STATE)) == ['b']


def test_asap_takes_never_tried_handlers_first() -> None:
    assert ids(lifecycles.asap(HANDLERS, state=state_with({'a': 1, 'b': 1, 'c': 0}))) == ['c']


def test_randomized_runs_one_of_them() -> None:
    random.seed(1)
    seen = {tuple(ids(lifecycles.randomized(HANDLERS, state=STATE))) for _ in range(100)}
    assert seen == {('a',), ('b',), ('c',)}


def test_shuffled_runs_all_of_them_in_various_orders() -> None:
    random.seed(1)
    seen = {tuple(ids(lifecycles.shuffled(HANDLERS, state=STATE))) for _ in range(100)}
    assert all(sorted(order) == ['a', 'b', 'c'] for order in seen)
    assert len(seen) > 1


@pytest.mark.parametrize('fn', [lifecycles.all_at_once, lifecycles.one_by_one, lifecycles.randomized,
                                lifecycles.shuffled, lifecycles.asap])
def test_nothing_due_means_nothing_to_run(fn: Any) -> None:
    assert list(fn([], state=State({}))) == []


def test_the_default_is_asap_and_can_be_changed_and_restored(caplog: pytest.LogCaptureFixture) -> None:
    assert kopf.get_default_lifecycle() is kopf.lifecycles.asap
    kopf.set_default_lifecycle(kopf.lifecycles.one_by_one)
    assert kopf.get_default_lifecycle() is kopf.lifecycles.one_by_one
    with caplog.at_level(logging.WARNING):
        kopf.set_default_lifecycle(None)
    assert kopf.get_default_lifecycle() is kopf.lifecycles.asap
    assert "The default lifecycle is already set" in caplog.text


def test_a_non_callable_lifecycle_is_refused_with_a_hint() -> None:
    with pytest.raises(TypeError, match=r"A lifecycle must be a function .* kopf.lifecycles.one_by_one"):
        kopf.set_default_lifecycle('asap')  # type: ignore[arg-type]
    assert kopf.get_default_lifecycle() is kopf.lifecycles.asap


def test_plan_uses_the_default_lifecycle_when_none_is_given() -> None:
    kopf.set_default_lifecycle(kopf.lifecycles.all_at_once)
    assert ids(lifecycles.plan(None, HANDLERS, state=STATE)) == ['a', 'b', 'c']


def test_plan_passes_the_state_to_the_lifecycle() -> None:
    def custom(handlers: Sequence[BaseHandler], *, state: State, **_: Any) -> Sequence[BaseHandler]:
        return [h for h in handlers if state[h.id].retries == 1][::-1]
    assert ids(lifecycles.plan(custom, HANDLERS, state=STATE)) == ['c', 'b']


def test_plan_refuses_handlers_that_are_not_due() -> None:
    def rogue(handlers: Sequence[BaseHandler], **_: Any) -> Sequence[BaseHandler]:
        return [handler('finished')]
    with pytest.raises(RuntimeError, match=r"chosen handlers that are not due now"):
        lifecycles.plan(rogue, HANDLERS, state=STATE)


def test_plan_does_not_call_the_lifecycle_when_nothing_is_due() -> None:
    def failing(handlers: Sequence[BaseHandler], **_: Any) -> Sequence[BaseHandler]:
        raise AssertionError("must not be called")
    assert lifecycles.plan(failing, [], state=STATE) == []


def test_plan_refuses_to_choose_nothing_when_something_is_due() -> None:
    def idle(handlers: Sequence[BaseHandler], **_: Any) -> Sequence[BaseHandler]:
        return []
    with pytest.raises(RuntimeError, match=r"has chosen none of the due handlers"):
        lifecycles.plan(idle, HANDLERS, state=STATE)
