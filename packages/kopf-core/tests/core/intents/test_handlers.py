"""
Handlers: which causes they apply to, how their ids are formed, how they are named in the logs.

Handlers are constructed directly (not via the decorators) to specify the
intents layer on its own.
"""
import functools
import logging
from typing import Any, Optional

import pytest

from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource, Selector
from kopf._core.intents.causes import ChangingCause, Reason
from kopf._core.intents.handlers import (
    ActivityHandler,
    ChangingHandler,
    DaemonHandler,
    HandlerId,
    TimerHandler,
    build_handler_id,
    parse_field,
)
from kopf._core.intents.matching import applies_to


def fn(**_: Any) -> None:
    pass


def make_handler(**kwargs: Any) -> ChangingHandler:
    options: dict[str, Any] = dict(fn=fn, id=HandlerId('fn'), param=None, errors=None, timeout=None, retries=None,
                                   backoff=None, selector=Selector('kopfexamples'))
    options.update(kwargs)
    return ChangingHandler(**options)


def make_cause(reason: Reason, *, initial: bool = False) -> ChangingCause:
    return ChangingCause(resource=Resource('kopf.dev', 'v1', 'kopfexamples'), body=Body({}), patch=Patch(),
                         memo=None, logger=logging.getLogger('test'), reason=reason, initial=initial)


# Applicability to causes.

@pytest.mark.parametrize('reason', [Reason.CREATE, Reason.UPDATE, Reason.DELETE])
@pytest.mark.parametrize('initial', [False, True])
def test_regular_handlers_apply_to_their_own_reason(reason: Reason, initial: bool) -> None:
    assert applies_to(make_handler(reason=reason), make_cause(reason, initial=initial))


@pytest.mark.parametrize('handler_reason, cause_reason', [
    pytest.param(Reason.CREATE, Reason.UPDATE, id='create-on-update'),
    pytest.param(Reason.CREATE, Reason.RESUME, id='create-on-resume'),
    pytest.param(Reason.UPDATE, Reason.CREATE, id='update-on-create'),
    pytest.param(Reason.DELETE, Reason.CREATE, id='delete-on-create'),
    pytest.param(Reason.UPDATE, Reason.DELETE, id='update-on-delete'),
])
def test_regular_handlers_do_not_apply_to_other_reasons(handler_reason: Reason, cause_reason: Reason) -> None:
    assert not applies_to(make_handler(reason=handler_reason), make_cause(cause_reason, initial=True))


@pytest.mark.parametrize('reason', [Reason.CREATE, Reason.UPDATE, Reason.RESUME])
def test_resume_handlers_apply_to_initial_causes(reason: Reason) -> None:
    assert applies_to(make_handler(initial=True), make_cause(reason, initial=True))


@pytest.mark.parametrize('reason', [Reason.CREATE, Reason.UPDATE, Reason.DELETE])
def test_resume_handlers_do_not_apply_to_non_initial_causes(reason: Reason) -> None:
    assert not applies_to(make_handler(initial=True, deleted=True), make_cause(reason, initial=False))


@pytest.mark.parametrize('deleted', [pytest.param(None, id='default'), pytest.param(False, id='explicit')])
def test_resume_handlers_do_not_apply_to_initial_deletion(deleted: Optional[bool]) -> None:
    assert not applies_to(make_handler(initial=True, deleted=deleted), make_cause(Reason.DELETE, initial=True))


def test_resume_handlers_with_deleted_true_apply_to_initial_deletion() -> None:
    assert applies_to(make_handler(initial=True, deleted=True), make_cause(Reason.DELETE, initial=True))


@pytest.mark.parametrize('reason', [Reason.NOOP, Reason.FREE, Reason.GONE])
def test_resume_handlers_do_not_apply_to_housekeeping_reasons(reason: Reason) -> None:
    assert not applies_to(make_handler(initial=True, deleted=True), make_cause(reason, initial=True))


@pytest.mark.parametrize('initial', [False, True])
def test_field_handlers_apply_to_updates(initial: bool) -> None:
    handler = make_handler(reason=None, field=('spec', 'field'))
    assert applies_to(handler, make_cause(Reason.UPDATE, initial=initial))


@pytest.mark.parametrize('reason', [Reason.CREATE, Reason.DELETE, Reason.RESUME])
def test_field_handlers_apply_to_other_handler_reasons_too(reason: Reason) -> None:
    # Whether the field has changed is up to the filters (as in Kopf 1.45: also at creation).
    handler = make_handler(reason=None, field=('spec', 'field'))
    assert applies_to(handler, make_cause(reason, initial=True))


@pytest.mark.parametrize('reason', [Reason.NOOP, Reason.FREE, Reason.GONE])
def test_field_handlers_do_not_apply_to_housekeeping_reasons(reason: Reason) -> None:
    handler = make_handler(reason=None, field=('spec', 'field'))
    assert not applies_to(handler, make_cause(reason, initial=True))


# Ids.

def test_default_id_is_the_function_qualname() -> None:
    def inner(**_: Any) -> None:
        pass

    assert build_handler_id(fn, None, None) == 'fn'
    assert build_handler_id(inner, None, None) == 'test_default_id_is_the_function_qualname.<locals>.inner'


def test_default_id_of_a_static_method_is_its_qualname() -> None:
    class Handlers:
        @staticmethod
        def handle(**_: Any) -> None:
            pass

    assert build_handler_id(Handlers.handle, None, None).endswith('<locals>.Handlers.handle')


def test_default_id_of_a_partial_is_that_of_the_wrapped_function() -> None:
    assert build_handler_id(functools.partial(fn, x=1), None, None) == 'fn'


def test_explicit_id_is_used_as_is() -> None:
    assert build_handler_id(fn, 'my-id', None) == 'my-id'


@pytest.mark.parametrize('id, expected', [
    pytest.param(None, 'fn/spec.field', id='default-id'),
    pytest.param('my-id', 'my-id/spec.field', id='explicit-id'),
])
def test_field_is_appended_to_the_id(id: Optional[str], expected: str) -> None:
    assert build_handler_id(fn, id, ('spec', 'field')) == expected


@pytest.mark.parametrize('field, expected', [
    pytest.param('spec.field', ('spec', 'field'), id='dotted'),
    pytest.param(['spec', 'field'], ('spec', 'field'), id='list'),
    pytest.param(('spec', 'field'), ('spec', 'field'), id='tuple'),
    pytest.param('spec', ('spec',), id='single'),
    pytest.param(None, None, id='none'),
    pytest.param('', None, id='empty'),
])
def test_fields_are_parsed_into_tuples(field: Any, expected: Any) -> None:
    assert parse_field(field) == expected


def test_unparseable_fields_are_refused() -> None:
    with pytest.raises(TypeError, match=r"Field must be"):
        parse_field(123)


# Titles in the log lines.

def test_titles_of_handler_kinds() -> None:
    common: dict[str, Any] = dict(fn=fn, id=HandlerId('fn'), param=None, errors=None, timeout=None,
                                  retries=None, backoff=None)
    assert make_handler().title == "Handler 'fn'"
    assert ActivityHandler(**common).title == "Activity 'fn'"
    assert DaemonHandler(**common).title == "Daemon 'fn'"
    assert TimerHandler(**common).title == "Timer 'fn'"
