"""
The decorators' signatures as the manual documents them, and the refusal of unknown options.

The options are declared once in bundles (see ``kopf.on``), so these tests make
sure that the bundles add up to exactly the documented signatures, in order.
"""
import inspect
from typing import Any, Callable

import pytest

import kopf
from kopf import on
from kopf._core.intents.webhooks import WebhookHandler, WebhookType

SELECTOR = ('__group_or_groupversion_or_name=None, __version_or_name=None, __name=None, *, group=None, '
            'version=None, kind=None, plural=None, singular=None, shortcut=None, category=None, ')
RETRYING = 'errors=None, timeout=None, retries=None, backoff=None, '
FILTERING = 'labels=None, annotations=None, when=None, field=None, value=None, '
ACTIVITY = '*, id=None, param=None, errors=None, timeout=None, retries=None, backoff=None, registry=None'

DOCUMENTED = {
    'startup': ACTIVITY,
    'cleanup': ACTIVITY,
    'login': ACTIVITY,
    'probe': ACTIVITY,
    'event': SELECTOR + 'id=None, param=None, ' + FILTERING + 'registry=None',
    'resume': SELECTOR + 'id=None, param=None, ' + RETRYING + 'deleted=None, ' + FILTERING + 'registry=None',
    'create': SELECTOR + 'id=None, param=None, ' + RETRYING + FILTERING + 'registry=None',
    'update': SELECTOR + 'id=None, param=None, ' + RETRYING + FILTERING + 'old=None, new=None, registry=None',
    'delete': SELECTOR + 'id=None, param=None, ' + RETRYING + 'optional=None, ' + FILTERING + 'registry=None',
    'field': (SELECTOR + 'id=None, param=None, ' + RETRYING +
              'labels=None, annotations=None, when=None, field, value=None, old=None, new=None, registry=None'),
    'index': SELECTOR + 'id=None, param=None, ' + RETRYING + FILTERING + 'registry=None',
    'daemon': (SELECTOR + 'id=None, param=None, ' + RETRYING + 'initial_delay=None, cancellation_backoff=None, '
               'cancellation_timeout=None, cancellation_polling=None, ' + FILTERING + 'registry=None'),
    'timer': (SELECTOR + 'id=None, param=None, ' + RETRYING +
              'interval=None, initial_delay=None, sharp=None, idle=None, ' + FILTERING + 'registry=None'),
    'validate': (SELECTOR + 'id=None, param=None, operation=None, operations=None, subresource=None, '
                 'persistent=None, side_effects=None, ignore_failures=None, ' + FILTERING + 'registry=None'),
    'mutate': (SELECTOR + 'id=None, param=None, operation=None, operations=None, subresource=None, '
               'persistent=None, side_effects=None, ignore_failures=None, ' + FILTERING + 'registry=None'),
    'subhandler': '*, id=None, param=None, ' + RETRYING + FILTERING + 'old=None, new=None',
    'register': 'fn, *, id=None, param=None, ' + RETRYING + 'labels=None, annotations=None, when=None',
}


def render(fn: Callable[..., Any]) -> str:
    """The signature as the manual's API reference shows it: names and defaults only."""
    parts = []
    star_added = False
    for param in inspect.signature(fn).parameters.values():
        if param.kind == param.KEYWORD_ONLY and not star_added:
            parts.append('*')
            star_added = True
        parts.append(param.name if param.default is inspect.Parameter.empty else f'{param.name}={param.default}')
    return ', '.join(parts)


@pytest.mark.parametrize('name', sorted(DOCUMENTED))
def test_signature_is_as_documented(name: str) -> None:
    assert render(getattr(on, name)) == DOCUMENTED[name]


@pytest.mark.parametrize('name', ['daemon', 'timer', 'index', 'subhandler', 'register'])
def test_top_level_aliases_are_the_same_decorators(name: str) -> None:
    assert getattr(kopf, name) is getattr(on, name)


@pytest.mark.parametrize('name', sorted(set(DOCUMENTED) - {'register'}))
def test_unknown_option_is_refused_with_the_decorators_name(name: str) -> None:
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'colour'$"):
        kwargs = {'field': 'spec'} if name == 'field' else {}
        getattr(on, name)(colour='red', **kwargs)


def test_field_decorator_requires_a_field() -> None:
    with pytest.raises(TypeError, match=r"^field\(\) missing a required argument: 'field'$"):
        on.field('kopfexamples')  # type: ignore[call-arg]  # type checkers catch it too


@pytest.mark.parametrize('name', ['ActivityDecorator', 'ChangingDecorator', 'DaemonDecorator',
                                  'IndexingDecorator', 'TimerDecorator', 'WatchingDecorator',
                                  'WebhookDecorator'])
def test_decorator_types_are_the_return_types(name: str) -> None:
    decorator_type = getattr(on, name)
    returned_by = [fn for fn in vars(on).values()
                   if inspect.isfunction(fn) and inspect.signature(fn).return_annotation == name]
    assert returned_by  # each type name annotates what some public decorator returns
    assert decorator_type is on.Decorator


@pytest.mark.parametrize('decorator, webhook_type', [
    pytest.param(on.validate, WebhookType.VALIDATING, id='validate'),
    pytest.param(on.mutate, WebhookType.MUTATING, id='mutate'),
])
def test_webhook_decorators_register_all_options(decorator: Callable[..., Any], webhook_type: WebhookType) -> None:
    registry = kopf.OperatorRegistry()

    def fn(**_: Any) -> None:
        pass

    decorator('kopfexamples', registry=registry, id='hook', param=1, operations=['CREATE', 'UPDATE'],
              subresource='status', persistent=True, side_effects=True, ignore_failures=True,
              labels={'a': 'b'}, annotations={'c': kopf.PRESENT}, field='spec.x', value=5)(fn)
    [handler] = registry.get_webhook_handlers()
    assert isinstance(handler, WebhookHandler)
    assert handler.fn is fn
    assert handler.id == 'hook/spec.x'
    assert handler.type == webhook_type
    assert handler.param == 1
    assert handler.operations == frozenset({'CREATE', 'UPDATE'})
    assert handler.subresource == 'status'
    assert handler.persistent is True
    assert handler.side_effects is True
    assert handler.ignore_failures is True
    assert handler.labels == {'a': 'b'}
    assert handler.annotations == {'c': kopf.PRESENT}
    assert handler.field == ('spec', 'x')
    assert handler.value == 5


@pytest.mark.parametrize('operation, operations, expected', [
    pytest.param(None, None, None, id='all-by-default'),
    pytest.param('DELETE', None, frozenset({'DELETE'}), id='one'),
    pytest.param(None, ('CONNECT',), frozenset({'CONNECT'}), id='several'),
    pytest.param('*', None, None, id='star'),
])
def test_webhook_operations(operation: Any, operations: Any, expected: Any) -> None:
    registry = kopf.OperatorRegistry()
    on.validate('kopfexamples', registry=registry, operation=operation, operations=operations)(lambda **_: None)
    assert registry.get_webhook_handlers()[0].operations == expected


@pytest.mark.parametrize('kwargs, error, message', [
    pytest.param({'operation': 'CREATE', 'operations': ['UPDATE']}, TypeError, "Either operation= or operations=",
                 id='both'),
    pytest.param({'operation': 'PATCH'}, ValueError, r"Unknown admission operations \['PATCH'\]", id='unknown'),
    pytest.param({'operations': 'CREATE'}, TypeError, "must be a collection", id='string'),
    pytest.param({'operations': []}, ValueError, "Unknown admission operations", id='empty'),
])
def test_wrong_webhook_operations_are_refused(kwargs: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        on.validate('kopfexamples', **kwargs)


def test_webhook_ids_are_unique_per_function() -> None:
    registry = kopf.OperatorRegistry()
    on.validate('kopfexamples', registry=registry, id='same')(lambda **_: None)
    with pytest.raises(ValueError, match=r"'same' is already used by another function"):
        on.mutate('kopfexamples', registry=registry, id='same')(lambda **_: None)


def test_webhook_handlers_without_kwargs_are_registered_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    registry = kopf.OperatorRegistry()
    on.validate('kopfexamples', registry=registry)(lambda: None)
    assert len(registry.get_webhook_handlers()) == 1
    assert "validating admission handler" in caplog.text


def test_kopf_on_has_all_the_public_names_of_kopf() -> None:
    names = ('resume create update delete field event index daemon timer startup cleanup login probe '
             'validate mutate subhandler register ActivityDecorator ChangingDecorator DaemonDecorator '
             'IndexingDecorator TimerDecorator WatchingDecorator WebhookDecorator').split()
    assert [name for name in names if not hasattr(on, name)] == []


@pytest.mark.parametrize('name', ['AdmissionError', 'Operation', 'UserInfo', 'Headers', 'SSLPeer', 'WebhookFn',
                                  'WebhookClientConfig', 'WebhookClientConfigService', 'WebhookServerProtocol'])
def test_admission_names_are_in_kopf(name: str) -> None:
    assert name in kopf.__all__
    assert getattr(kopf, name) is not None


@pytest.mark.parametrize('name', ['WebhookServer', 'WebhookK3dServer', 'WebhookMinikubeServer',
                                  'WebhookDockerDesktopServer', 'WebhookAutoServer', 'WebhookAutoTunnel'])
def test_webhook_servers_need_kopf_webhooks(name: str) -> None:
    # The core's own environment has no kopf-webhooks: the lazy names say what to install.
    assert name in kopf.__all__
    message = rf"^kopf\.{name} needs the 'kopf-webhooks' package: pip install kopf-webhooks$"
    with pytest.raises(ImportError, match=message):
        getattr(kopf, name)
