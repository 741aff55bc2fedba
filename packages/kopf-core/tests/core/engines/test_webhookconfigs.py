"""
Managed webhook configurations and serving: what goes into them, when, and what is refused.

Inputs: admission handlers registered with the public decorators, client
configs as servers yield them, and a small in-memory API (``FakeApi``) that
stores the configurations as the API server would (merge-patches replace the
``webhooks`` list as a whole). The servers are async generators written here,
as the manual's custom servers are. Not mocked: the engine's building and
applying of the configurations, and its serving loop.
"""
import asyncio
import importlib.util
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Sequence, Tuple

import pytest

import kopf
from kopf._cogs.clients import errors
from kopf._cogs.structs.references import Resource
from kopf._core.engines.webhooks import webhookconfigs, webhookserving
from kopf._core.intents.webhooks import WebhookType

KOPFEXAMPLES = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', singular='kopfexample',
                        namespaced=True)
PODS = Resource('', 'v1', 'pods', kind='Pod', singular='pod', namespaced=True)
CLIENT_CONFIG: kopf.WebhookClientConfig = {'url': 'https://127.0.0.1:1234/root', 'caBundle': 'Q0E='}


class FakeApi:
    """The configurations as stored, by (plural, name); every request is recorded as (verb, plural)."""

    def __init__(self, *, forbidden: bool = False) -> None:
        self.objects: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self.requests: List[Tuple[str, str]] = []
        self.forbidden = forbidden

    async def scan_resources(self, *, groups: Optional[Any] = None) -> Sequence[Resource]:
        self.requests.append(('scan', ','.join(sorted(groups)) if groups is not None else '*'))
        return [KOPFEXAMPLES, PODS]

    async def patch_object(self, resource: Resource, *, namespace: Optional[str], name: str,
                           patch: Mapping[str, Any], **_: Any) -> Dict[str, Any]:
        self.requests.append(('patch', resource.plural))
        if self.forbidden:
            raise errors.APIForbiddenError({'message': 'forbidden'}, status=403)
        if (resource.plural, name) not in self.objects:
            raise errors.APINotFoundError({'message': 'not found'}, status=404)
        self.objects[(resource.plural, name)].update(patch)
        return self.objects[(resource.plural, name)]

    async def create_object(self, resource: Resource, *, namespace: Optional[str],
                            body: Mapping[str, Any]) -> Dict[str, Any]:
        self.requests.append(('create', resource.plural))
        assert namespace is None and not resource.namespaced
        self.objects[(resource.plural, body['metadata']['name'])] = dict(body)
        return dict(body)

    def webhooks(self, plural: str, name: str = 'auto.kopf.dev') -> Dict[str, Dict[str, Any]]:
        return {webhook['name']: webhook for webhook in self.objects[(plural, name)]['webhooks']}


@pytest.fixture()
def registry() -> kopf.OperatorRegistry:
    return kopf.OperatorRegistry()


def fn(**_: Any) -> None:
    pass


def build(registry: kopf.OperatorRegistry, type: WebhookType = WebhookType.VALIDATING,
          **kwargs: Any) -> List[Dict[str, Any]]:
    return webhookconfigs.build_webhooks(registry.get_webhook_handlers(), type=type, name='auto.kopf.dev',
                                         client_config=CLIENT_CONFIG, resources=[KOPFEXAMPLES, PODS], **kwargs)


# Building the webhooks.

def test_webhook_of_a_handler_with_the_defaults(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('kopfexamples', registry=registry, id='check_fn')(fn)
    assert build(registry) == [{
        'name': 'check-fn.auto.kopf.dev',  # underscores are not allowed in DNS names
        'clientConfig': {'url': 'https://127.0.0.1:1234/root/check_fn', 'caBundle': 'Q0E='},
        'rules': [{'apiGroups': ['kopf.dev'], 'apiVersions': ['v1'], 'resources': ['kopfexamples'],
                   'operations': ['*'], 'scope': '*'}],
        'sideEffects': 'None',
        'failurePolicy': 'Fail',
        'matchPolicy': 'Equivalent',
        'timeoutSeconds': 30,
        'admissionReviewVersions': ['v1', 'v1beta1'],
    }]


def test_webhook_options(registry: kopf.OperatorRegistry) -> None:
    kopf.on.mutate('pods', registry=registry, id='fn', operations=['UPDATE', 'CREATE'], subresource='status',
                   side_effects=True, ignore_failures=True)(fn)
    [webhook] = build(registry, type=WebhookType.MUTATING)
    assert webhook['rules'] == [{'apiGroups': [''], 'apiVersions': ['v1'], 'resources': ['pods/status'],
                                 'operations': ['CREATE', 'UPDATE'], 'scope': '*'}]
    assert webhook['sideEffects'] == 'NoneOnDryRun'
    assert webhook['failurePolicy'] == 'Ignore'


def test_star_subresource_covers_the_body_and_all_subresources(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='fn', subresource='*')(fn)
    assert build(registry)[0]['rules'][0]['resources'] == ['pods', 'pods/*']


def test_labels_become_the_object_selector_where_expressible(registry: kopf.OperatorRegistry) -> None:
    labels = {'a': 'x', 'b': kopf.PRESENT, 'c': kopf.ABSENT, 'd': lambda value, **_: True}
    kopf.on.validate('pods', registry=registry, id='fn', labels=labels)(fn)
    assert build(registry)[0]['objectSelector'] == {'matchExpressions': [
        {'key': 'a', 'operator': 'In', 'values': ['x']},
        {'key': 'b', 'operator': 'Exists'},
        {'key': 'c', 'operator': 'DoesNotExist'},
    ]}


def test_only_the_handlers_of_the_type_go_to_its_configuration(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='v')(fn)
    kopf.on.mutate('pods', registry=registry, id='m')(fn)
    assert [webhook['name'] for webhook in build(registry)] == ['v.auto.kopf.dev']
    assert [webhook['name'] for webhook in build(registry, WebhookType.MUTATING)] == ['m.auto.kopf.dev']


def test_one_id_under_several_selectors_is_one_webhook(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='fn')(fn)
    kopf.on.validate('kopfexamples', registry=registry, id='fn')(fn)
    [webhook] = build(registry)
    assert [rule['resources'] for rule in webhook['rules']] == [['pods'], ['kopfexamples']]


def test_handlers_of_unknown_resources_get_no_webhook(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('unknownthings', registry=registry, id='fn')(fn)
    assert build(registry) == []


def test_persistent_only(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='kept', persistent=True)(fn)
    kopf.on.validate('pods', registry=registry, id='gone')(fn)
    assert [webhook['name'] for webhook in build(registry, persistent_only=True)] == ['kept.auto.kopf.dev']


@pytest.mark.parametrize('handler_id, expected', [
    pytest.param('validate1', 'validate1.auto.kopf.dev', id='plain'),
    pytest.param('create_fn', 'create-fn.auto.kopf.dev', id='underscores'),
    pytest.param('Outer.<locals>.fn/spec.x', 'outer.-locals-.fn-spec.x.auto.kopf.dev', id='sanitised'),
])
def test_webhook_names(handler_id: str, expected: str) -> None:
    assert webhookconfigs.build_webhook_name(handler_id, 'auto.kopf.dev') == expected


def test_service_client_configs_get_the_id_in_their_path(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='fn/x')(fn)
    service: kopf.WebhookClientConfig = {'service': {'namespace': 'ns', 'name': 'svc', 'path': '/hooks/',
                                                     'port': 443}}
    [webhook] = webhookconfigs.build_webhooks(registry.get_webhook_handlers(), type=WebhookType.VALIDATING,
                                              name='auto.kopf.dev', client_config=service, resources=[PODS])
    assert webhook['clientConfig'] == {'service': {'namespace': 'ns', 'name': 'svc', 'path': '/hooks/fn%2Fx',
                                                   'port': 443}}


# Applying them.

async def test_configurations_are_created_then_patched(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='v')(fn)
    kopf.on.mutate('pods', registry=registry, id='m')(fn)
    api = FakeApi()
    for url in ['https://first', 'https://second']:
        await webhookconfigs.apply_configurations(
            api, name='auto.kopf.dev', handlers_=registry.get_webhook_handlers(),  # type: ignore[arg-type]
            client_config={'url': url}, resources=[PODS])
    assert api.requests == [
        ('patch', 'validatingwebhookconfigurations'), ('create', 'validatingwebhookconfigurations'),
        ('patch', 'mutatingwebhookconfigurations'), ('create', 'mutatingwebhookconfigurations'),
        ('patch', 'validatingwebhookconfigurations'), ('patch', 'mutatingwebhookconfigurations'),
    ]
    stored = api.objects[('validatingwebhookconfigurations', 'auto.kopf.dev')]
    assert stored['apiVersion'] == 'admissionregistration.k8s.io/v1'
    assert stored['kind'] == 'ValidatingWebhookConfiguration'
    assert api.webhooks('validatingwebhookconfigurations')['v.auto.kopf.dev']['clientConfig'] == {
        'url': 'https://second/v'}
    assert api.webhooks('mutatingwebhookconfigurations')['m.auto.kopf.dev']['clientConfig'] == {
        'url': 'https://second/m'}


async def test_no_configuration_is_created_without_webhooks(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='v')(fn)
    api = FakeApi()
    await webhookconfigs.apply_configurations(
        api, name='auto.kopf.dev', handlers_=registry.get_webhook_handlers(),  # type: ignore[arg-type]
        client_config=CLIENT_CONFIG, resources=[PODS])
    assert ('mutatingwebhookconfigurations', 'auto.kopf.dev') not in api.objects


async def test_missing_rbac_is_one_clear_error(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='v')(fn)
    with pytest.raises(webhookconfigs.AdmissionSetupError) as err:
        await webhookconfigs.apply_configurations(
            FakeApi(forbidden=True), name='auto.kopf.dev',  # type: ignore[arg-type]
            handlers_=registry.get_webhook_handlers(), client_config=CLIENT_CONFIG, resources=[PODS])
    assert str(err.value) == (
        "The operator is not allowed to manage validatingwebhookconfigurations.admissionregistration.k8s.io "
        "(needs the verbs 'create' and 'patch'): grant them in its ClusterRole, "
        "or unset settings.admission.managed. (forbidden)")


# The setup checks.

def test_no_handlers_need_no_server(registry: kopf.OperatorRegistry) -> None:
    webhookserving.check_setup(registry=registry, settings=kopf.OperatorSettings())


def test_handlers_without_a_server_are_refused(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry)(fn)
    with pytest.raises(kopf.AdmissionSetupError, match=(
            r"^Admission handlers exist, but no webhook server is configured: set settings.admission.server "
            r"in a @kopf.on.startup handler, e.g. to kopf.WebhookAutoServer\(\)")):
        webhookserving.check_setup(registry=registry, settings=kopf.OperatorSettings())


def test_missing_kopf_webhooks_is_named(registry: kopf.OperatorRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    kopf.on.validate('pods', registry=registry)(fn)
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name: None)
    with pytest.raises(kopf.AdmissionSetupError, match=(
            r"\(it needs the 'kopf-webhooks' package: pip install kopf-webhooks\)\.$")):
        webhookserving.check_setup(registry=registry, settings=kopf.OperatorSettings())


@pytest.mark.parametrize('server, managed, message', [
    pytest.param('not-a-server', None, r"settings.admission.server must be a webhook server", id='server'),
    pytest.param(lambda fn: None, 'NoDots', r"settings.admission.managed must be a DNS name", id='no-dots'),
    pytest.param(lambda fn: None, 'under_score.dev', r"settings.admission.managed must be a DNS name", id='chars'),
])
def test_unusable_settings_are_refused(registry: kopf.OperatorRegistry, server: Any, managed: Any,
                                       message: str) -> None:
    kopf.on.validate('pods', registry=registry)(fn)
    settings = kopf.OperatorSettings()
    settings.admission.server = server
    settings.admission.managed = managed
    with pytest.raises(kopf.AdmissionSetupError, match=message):
        webhookserving.check_setup(registry=registry, settings=settings)


# Serving.

class ScriptedServer:
    """A custom server as the manual shows: yields the given configs, then serves forever; records all."""

    def __init__(self, *urls: str, exit_after: bool = False) -> None:
        self.urls = urls
        self.exit_after = exit_after
        self.fn: Any = None
        self.yielded = asyncio.Event()
        self.entered = self.exited = self.closed = False

    async def __aenter__(self) -> 'ScriptedServer':
        self.entered = True
        return self

    async def __aexit__(self, *_: Any) -> None:
        self.exited = True

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        self.fn = fn
        try:
            for url in self.urls:
                yield {'url': url}
            self.yielded.set()
            if not self.exit_after:
                await asyncio.Event().wait()
        finally:
            self.closed = True


def serve(registry: kopf.OperatorRegistry, api: FakeApi, server: Any, managed: Optional[str]) -> Any:
    settings = kopf.OperatorSettings()
    settings.admission.server = server
    settings.admission.managed = managed
    return webhookserving.serve_admission(registry=registry, settings=settings, client=api,  # type: ignore[arg-type]
                                          memo=kopf.Memo(), memo_of=lambda body: None, indices={})


async def test_every_client_config_is_applied_and_non_persistent_webhooks_are_removed_on_exit(
        registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='kept', persistent=True)(fn)
    kopf.on.validate('pods', registry=registry, id='gone')(fn)
    api, server = FakeApi(), ScriptedServer('https://one', 'https://two')
    task = asyncio.create_task(serve(registry, api, server, 'auto.kopf.dev'))
    await server.yielded.wait()
    await asyncio.sleep(0)  # let the last config be applied
    webhooks = api.webhooks('validatingwebhookconfigurations')
    assert set(webhooks) == {'kept.auto.kopf.dev', 'gone.auto.kopf.dev'}
    assert webhooks['gone.auto.kopf.dev']['clientConfig'] == {'url': 'https://two/gone'}
    assert api.requests.count(('scan', '*')) == 2

    # The framework's function is what the server got: it answers the reviews.
    response = await server.fn({'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview', 'request': {
        'uid': 'u1', 'operation': 'CREATE', 'resource': {'group': '', 'version': 'v1', 'resource': 'pods'},
        'object': {'metadata': {'name': 'p1'}}}}, webhook='gone')
    assert response['response'] == {'uid': 'u1', 'allowed': True}

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert set(api.webhooks('validatingwebhookconfigurations')) == {'kept.auto.kopf.dev'}
    assert server.entered and server.exited and server.closed


async def serve_one_config_unmanaged(registry: kopf.OperatorRegistry, api: FakeApi) -> None:
    """Serve until the server has yielded its only config, then stop as the operator does."""
    server = ScriptedServer('https://one')
    task = asyncio.create_task(serve(registry, api, server, None))
    await server.yielded.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_unmanaged_serving_touches_no_configurations(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='fn')(fn)
    api = FakeApi()
    await serve_one_config_unmanaged(registry, api)
    assert api.objects == {}
    assert api.requests == [('scan', '*')]


async def test_scanning_is_limited_to_the_handlers_groups(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('kopf.dev', 'v1', 'kopfexamples', registry=registry, id='fn')(fn)
    api = FakeApi()
    await serve_one_config_unmanaged(registry, api)
    assert api.requests == [('scan', 'kopf.dev')]


async def test_server_exiting_by_itself_stops_the_operator(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='fn')(fn)
    with pytest.raises(kopf.AdmissionSetupError, match=r"The webhook server or tunnel has exited unexpectedly"):
        await serve(registry, FakeApi(), ScriptedServer('https://one', exit_after=True), None)


async def test_missing_dependencies_of_the_server_are_setup_errors(registry: kopf.OperatorRegistry) -> None:
    kopf.on.validate('pods', registry=registry, id='fn')(fn)

    async def server(fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        no_configs: List[kopf.WebhookClientConfig] = []
        for config in no_configs:  # an async generator that fails before yielding anything, as servers do
            yield config
        raise ImportError("Self-signed certificates need the 'cryptography' library.")

    with pytest.raises(kopf.AdmissionSetupError, match=r"^Self-signed certificates need the 'cryptography' library\.$"):
        await serve(registry, FakeApi(), server, 'auto.kopf.dev')
