"""
The kwargs of resource-changing handlers, as the manual's "Arguments" lists them.

Causes are built directly from a raw body; the handler's state and the clock
are given explicitly (the clock by replacing ``progression.utcnow``).
"""
import datetime
import logging
from types import MappingProxyType
from typing import Any, Dict, Optional

import pytest

from kopf._cogs.structs.bodies import Body
from kopf._cogs.structs.diffs import diff
from kopf._cogs.structs.patches import Patch
from kopf._cogs.structs.references import Resource
from kopf._core.actions import progression
from kopf._core.actions.kwargs import build_changing_kwargs, build_resource_kwargs, build_watching_kwargs
from kopf._core.actions.progression import HandlerState
from kopf._core.intents.causes import ChangingCause, Reason, WatchingCause
from kopf._core.intents.handlers import ChangingHandler, HandlerId

UTC = datetime.timezone.utc
STARTED = datetime.datetime(2026, 11, 22, 8, 14, 26, 515992, tzinfo=UTC)
NOW = STARTED + datetime.timedelta(seconds=90)
RESOURCE = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
LOGGER = logging.getLogger('kopf.objects')
RAW: Dict[str, Any] = {
    'apiVersion': 'kopf.dev/v1',
    'kind': 'KopfExample',
    'metadata': {'name': 'kex1', 'namespace': 'ns1', 'uid': 'uid-1',
                 'labels': {'app': 'x'}, 'annotations': {'note': 'y'}},
    'spec': {'field': 'new', 'items': ['a']},
    'status': {'phase': 'Running'},
}
OLD = {'spec': {'field': 'old', 'items': ['a']}}
NEW = {'spec': {'field': 'new', 'items': ['a']}}


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progression, 'utcnow', lambda: NOW)


def fn(**_: Any) -> None:
    pass


def make_handler(*, field: Optional[tuple[str, ...]] = None, param: Any = None) -> ChangingHandler:
    return ChangingHandler(fn=fn, id=HandlerId('fn'), param=param, errors=None, timeout=None, retries=None,
                           backoff=None, field=field)


def make_cause(*, indices: Any = None) -> ChangingCause:
    return ChangingCause(resource=RESOURCE, body=Body(RAW), patch=Patch(), memo={'m': 1}, logger=LOGGER,
                         indices=indices, reason=Reason.UPDATE, diff=diff(OLD, NEW), old=OLD, new=NEW)


def test_object_kwargs() -> None:
    cause = make_cause()
    kwargs = build_changing_kwargs(cause)
    assert kwargs['resource'] is RESOURCE
    assert kwargs['body'] is cause.body
    assert kwargs['spec'] is cause.body.spec
    assert kwargs['meta'] is cause.body.meta
    assert kwargs['status'] is cause.body.status
    assert dict(kwargs['spec']) == RAW['spec']
    assert dict(kwargs['status']) == RAW['status']
    assert (kwargs['uid'], kwargs['name'], kwargs['namespace']) == ('uid-1', 'kex1', 'ns1')
    assert dict(kwargs['labels']) == {'app': 'x'}
    assert dict(kwargs['annotations']) == {'note': 'y'}


def test_operational_kwargs() -> None:
    cause = make_cause()
    kwargs = build_changing_kwargs(cause)
    assert kwargs['patch'] is cause.patch
    assert kwargs['logger'] is LOGGER
    assert kwargs['memo'] is cause.memo


def test_causation_and_diffing_kwargs_of_whole_object_handlers() -> None:
    kwargs = build_changing_kwargs(make_cause(), handler=make_handler())
    assert kwargs['reason'] == Reason.UPDATE
    assert kwargs['old'] == OLD
    assert kwargs['new'] == NEW
    assert kwargs['diff'] == [('change', ('spec', 'field'), 'old', 'new')]


def test_field_handlers_get_field_relative_old_new_and_diff() -> None:
    kwargs = build_changing_kwargs(make_cause(), handler=make_handler(field=('spec', 'field')))
    assert kwargs['old'] == 'old'
    assert kwargs['new'] == 'new'
    assert kwargs['diff'] == [('change', (), 'old', 'new')]


def test_field_handlers_of_unchanged_fields_get_their_values_and_an_empty_diff() -> None:
    kwargs = build_changing_kwargs(make_cause(), handler=make_handler(field=('spec', 'items')))
    assert kwargs['old'] == ['a']
    assert kwargs['new'] == ['a']
    assert kwargs['diff'] == []


def test_field_handlers_of_absent_fields_get_none() -> None:
    kwargs = build_changing_kwargs(make_cause(), handler=make_handler(field=('spec', 'nonexistent', 'x')))
    assert (kwargs['old'], kwargs['new']) == (None, None)


def test_param_is_the_handlers_option() -> None:
    assert build_changing_kwargs(make_cause(), handler=make_handler(param=123))['param'] == 123


def test_retrying_kwargs_come_from_the_handlers_state() -> None:
    state = HandlerState(started=STARTED, retries=2)
    kwargs = build_changing_kwargs(make_cause(), handler=make_handler(), state=state)
    assert kwargs['retry'] == 2
    assert kwargs['runtime'] == datetime.timedelta(seconds=90)
    assert isinstance(kwargs['started'], datetime.datetime)
    assert kwargs['started'].replace(tzinfo=None) == STARTED.replace(tzinfo=None)


def test_retrying_kwargs_without_a_state_are_of_the_first_attempt_now() -> None:
    kwargs = build_changing_kwargs(make_cause())
    assert kwargs['retry'] == 0
    assert kwargs['runtime'] == datetime.timedelta(0)
    assert kwargs['started'].replace(tzinfo=None) == NOW.replace(tzinfo=None)


def test_every_documented_kwarg_of_changing_handlers_is_present() -> None:
    kwargs = build_changing_kwargs(make_cause(), handler=make_handler(), state=HandlerState(started=STARTED))
    assert set(kwargs) >= {
        'body', 'spec', 'meta', 'status', 'uid', 'name', 'namespace', 'labels', 'annotations',
        'patch', 'logger', 'memo', 'resource', 'reason', 'diff', 'old', 'new',
        'retry', 'started', 'runtime', 'param',
    }


def test_indices_are_injected_by_their_names() -> None:
    index = {'key': ['value']}
    kwargs = build_changing_kwargs(make_cause(indices={'by_name': index}))
    assert kwargs['by_name'] is index


def test_cluster_scoped_objects_have_no_namespace() -> None:
    cause = WatchingCause(resource=RESOURCE, body=Body({'metadata': {'name': 'c1'}}), patch=Patch(),
                          memo=None, logger=LOGGER)
    kwargs = build_resource_kwargs(cause)
    assert kwargs['namespace'] is None
    assert kwargs['name'] == 'c1'


def test_watching_handlers_get_the_raw_event_and_its_type() -> None:
    event = {'type': 'ADDED', 'object': RAW}
    cause = WatchingCause(resource=RESOURCE, body=Body(RAW), patch=Patch(), memo=None, logger=LOGGER,
                          type='ADDED', event=event)
    kwargs = build_watching_kwargs(cause)
    assert kwargs['event'] is event
    assert kwargs['type'] == 'ADDED'
    assert kwargs['name'] == 'kex1'


def test_field_handlers_resolve_fields_in_any_mappings() -> None:
    cause = make_cause()
    cause.old, cause.new = MappingProxyType(OLD), Body(RAW)
    kwargs = build_changing_kwargs(cause, handler=make_handler(field=('spec', 'field')))
    assert (kwargs['old'], kwargs['new']) == ('old', 'new')
