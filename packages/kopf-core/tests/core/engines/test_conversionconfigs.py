"""
Managed CRD conversions and the serving of conversion functions: what is patched, when, and restored.

Inputs: conversion functions registered with ``@kopf.on.convert``, client
configs as custom servers yield them (async generators written here, as the
manual's custom servers are), and a small in-memory API (``FakeCrdApi``) that
keeps the CRDs and applies JSON-patches as the API server does (``test``,
``add``, ``remove``; a new resourceVersion on every write). Not mocked: the
engine's building and applying of the patches, and its serving loop.
"""
import asyncio
import json
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Sequence, Tuple

import pytest

import kopf
from kopf._cogs.clients import errors
from kopf._cogs.clients.protocols import PatchType
from kopf._cogs.structs.references import Resource
from kopf._core.engines.webhooks import conversionconfigs, webhookconfigs, webhookserving

KOPFEXAMPLES = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
KOPFEXAMPLES_V2 = Resource('kopf.dev', 'v2', 'kopfexamples', kind='KopfExample', namespaced=True, preferred=False)
OTHERS = Resource('kopf.dev', 'v1', 'others', kind='Other', namespaced=True)
PODS = Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
CRD = 'kopfexamples.kopf.dev'
ANNOTATION = 'auto.kopf.dev/original-conversion'


class FakeCrdApi:
    """The CRDs as stored, by name; every request is recorded as (verb, plural or name)."""

    def __init__(self, *crds: str, forbidden: bool = False, conflicts: int = 0) -> None:
        self.crds: Dict[str, Dict[str, Any]] = {
            name: {'metadata': {'name': name, 'resourceVersion': '1'}, 'spec': {'conversion': {'strategy': 'None'}}}
            for name in crds}
        self.requests: List[Tuple[str, str]] = []
        self.forbidden = forbidden
        self.conflicts = conflicts  # how many times a writer comes in between the read and the patch

    async def scan_resources(self, *, groups: Optional[Any] = None) -> Sequence[Resource]:
        self.requests.append(('scan', ','.join(sorted(groups)) if groups is not None else '*'))
        return [KOPFEXAMPLES, KOPFEXAMPLES_V2, OTHERS, PODS]

    async def get_object(self, resource: Resource, *, namespace: Optional[str], name: str) -> Dict[str, Any]:
        self.requests.append(('get', name))
        assert resource.plural == 'customresourcedefinitions' and namespace is None
        if self.forbidden:
            raise errors.APIForbiddenError({'message': 'forbidden'}, status=403)
        if self.conflicts:
            self.conflicts -= 1
            crd = json.loads(json.dumps(self.crds[name]))
            self.crds[name]['metadata']['resourceVersion'] += '+'  # changed right after our read
            return crd  # type: ignore[no-any-return]
        return json.loads(json.dumps(self.crds[name]))  # type: ignore[no-any-return]

    async def patch_object(self, resource: Resource, *, namespace: Optional[str], name: str,
                           patch: Sequence[Mapping[str, Any]], patch_type: Any = None, **_: Any) -> Dict[str, Any]:
        self.requests.append(('patch', name))
        assert patch_type == PatchType.JSON
        crd = json.loads(json.dumps(self.crds[name]))
        for op in patch:
            *parents, key = [part.replace('~1', '/').replace('~0', '~') for part in op['path'].split('/')[1:]]
            parent = crd
            for part in parents:
                parent = parent[part]
            if op['op'] == 'test' and parent.get(key) != op['value']:
                raise errors.APIUnprocessableEntityError({'message': 'test failed'}, status=422)
            elif op['op'] == 'add':
                parent[key] = op['value']
            elif op['op'] == 'remove':
                del parent[key]
        crd['metadata']['resourceVersion'] += '1'
        self.crds[name] = crd
        return crd  # type: ignore[no-any-return]

    def conversion(self, name: str = CRD) -> Dict[str, Any]:
        return self.crds[name]['spec']['conversion']  # type: ignore[no-any-return]

    def annotations(self, name: str = CRD) -> Dict[str, str]:
        return self.crds[name]['metadata'].get('annotations', {})  # type: ignore[no-any-return]


@pytest.fixture()
def registry() -> kopf.OperatorRegistry:
    return kopf.OperatorRegistry()


def fn(**_: Any) -> None:
    pass


WEBHOOK = {'strategy': 'Webhook', 'webhook': {'conversionReviewVersions': ['v1'], 'clientConfig': {
    'url': 'https://127.0.0.1:1234/root/conversion', 'caBundle': 'Q0E='}}}


# Building.

def test_conversion_points_at_the_url_with_its_own_path() -> None:
    conversion = conversionconfigs.build_conversion({'url': 'https://127.0.0.1:1234/root/', 'caBundle': 'Q0E='})
    assert conversion == WEBHOOK


def test_conversion_points_at_the_service_with_its_own_path() -> None:
    conversion = conversionconfigs.build_conversion(
        {'service': {'namespace': 'ns', 'name': 'svc', 'port': 443}, 'url': None})
    assert conversion['webhook']['clientConfig'] == {
        'service': {'namespace': 'ns', 'name': 'svc', 'port': 443, 'path': '/conversion'}}


def test_crds_are_selected_by_the_functions_resources_without_built_ins(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    kopf.on.convert('kopfexamples', source='v2', target='v1', registry=registry)(fn)
    kopf.on.convert('pods', source='v1', target='v2', registry=registry)(fn)
    names = conversionconfigs.select_crd_names(registry.get_conversion_handlers().get_all_handlers(),
                                               [KOPFEXAMPLES, KOPFEXAMPLES_V2, OTHERS, PODS])
    assert names == [CRD]


def test_only_crds_with_both_versions_are_selected_by_broad_selectors(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert(kopf.EVERYTHING, source='v1', target='v2', registry=registry)(fn)
    names = conversionconfigs.select_crd_names(registry.get_conversion_handlers().get_all_handlers(),
                                               [KOPFEXAMPLES, KOPFEXAMPLES_V2, OTHERS, PODS])
    assert names == [CRD]  # not others.kopf.dev: it has no v2


def test_crds_without_the_groups_preferred_version_are_selected(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    v1, v2 = (Resource('kopf.dev', v, 'kopfexamples', kind='KopfExample', preferred=False) for v in ['v1', 'v2'])
    v3 = Resource('kopf.dev', 'v3', 'newer', kind='Newer', preferred=True)  # the group's preferred version
    names = conversionconfigs.select_crd_names(registry.get_conversion_handlers().get_all_handlers(), [v1, v2, v3])
    assert names == [CRD]


# Patching and restoring.

async def test_crd_is_pointed_at_the_server_and_its_original_remembered() -> None:
    api = FakeCrdApi(CRD)
    managed = conversionconfigs.ManagedConversions(api, managed='auto.kopf.dev')  # type: ignore[arg-type]
    await managed.apply({'url': 'https://127.0.0.1:1234/root', 'caBundle': 'Q0E='}, [CRD])
    assert api.conversion() == WEBHOOK
    assert json.loads(api.annotations()[ANNOTATION]) == {'strategy': 'None'}


async def test_a_new_client_config_repoints_and_keeps_the_first_original() -> None:
    api = FakeCrdApi(CRD)
    managed = conversionconfigs.ManagedConversions(api, managed='auto.kopf.dev')  # type: ignore[arg-type]
    await managed.apply({'url': 'https://one'}, [CRD])
    await managed.apply({'url': 'https://two'}, [CRD])
    assert api.conversion()['webhook']['clientConfig'] == {'url': 'https://two/conversion'}
    assert json.loads(api.annotations()[ANNOTATION]) == {'strategy': 'None'}


async def test_restoring_puts_the_original_back_and_removes_the_annotation() -> None:
    api = FakeCrdApi(CRD)
    api.crds[CRD]['metadata']['annotations'] = {'other': 'kept'}
    managed = conversionconfigs.ManagedConversions(api, managed='auto.kopf.dev')  # type: ignore[arg-type]
    await managed.apply({'url': 'https://one'}, [CRD])
    await managed.restore()
    assert api.conversion() == {'strategy': 'None'}
    assert api.annotations() == {'other': 'kept'}


async def test_original_of_a_killed_previous_run_is_the_one_restored() -> None:
    api = FakeCrdApi(CRD)
    previous = {'strategy': 'Webhook', 'webhook': {'clientConfig': {'url': 'https://theirs'},
                                                   'conversionReviewVersions': ['v1']}}
    api.crds[CRD]['metadata']['annotations'] = {ANNOTATION: json.dumps(previous)}
    api.crds[CRD]['spec']['conversion'] = dict(WEBHOOK)  # left behind by our previous run
    managed = conversionconfigs.ManagedConversions(api, managed='auto.kopf.dev')  # type: ignore[arg-type]
    await managed.apply({'url': 'https://new'}, [CRD])
    await managed.restore()
    assert api.conversion() == previous
    assert ANNOTATION not in api.annotations()


async def test_a_concurrent_change_is_reread_before_patching() -> None:
    api = FakeCrdApi(CRD, conflicts=2)
    managed = conversionconfigs.ManagedConversions(api, managed='auto.kopf.dev')  # type: ignore[arg-type]
    await managed.apply({'url': 'https://one'}, [CRD])
    assert api.conversion()['strategy'] == 'Webhook'
    assert api.requests == [('get', CRD), ('patch', CRD)] * 3


async def test_missing_rbac_is_one_clear_error() -> None:
    api = FakeCrdApi(CRD, forbidden=True)
    managed = conversionconfigs.ManagedConversions(api, managed='auto.kopf.dev')  # type: ignore[arg-type]
    with pytest.raises(kopf.AdmissionSetupError) as err:
        await managed.apply({'url': 'https://one'}, [CRD])
    assert str(err.value).startswith(
        "The operator is not allowed to patch the conversion of the CRD 'kopfexamples.kopf.dev' (needs the "
        "verbs 'get' and 'patch' on customresourcedefinitions.apiextensions.k8s.io): grant them in its "
        "ClusterRole, or unset settings.admission.managed and set the CRD's spec.conversion yourself.")


async def test_failed_restoring_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    api = FakeCrdApi(CRD)
    managed = conversionconfigs.ManagedConversions(api, managed='auto.kopf.dev')  # type: ignore[arg-type]
    await managed.apply({'url': 'https://one'}, [CRD])
    api.forbidden = True
    await managed.restore()
    assert "The conversion of the CRD 'kopfexamples.kopf.dev' could not be restored: " in caplog.text


# Serving.

class ScriptedServer:
    """A custom server: yields the given configs, then serves forever."""

    def __init__(self, *urls: str) -> None:
        self.urls = urls
        self.fn: Any = None
        self.yielded = asyncio.Event()
        self.served_conversion: Optional[Dict[str, Any]] = None  # the CRD's conversion while served

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        self.fn = fn
        for url in self.urls:
            yield {'url': url}
        self.yielded.set()
        await asyncio.Event().wait()


async def serve_until_yielded(registry: kopf.OperatorRegistry, api: FakeCrdApi, managed: Optional[str],
                              *urls: str) -> ScriptedServer:
    """Serve until the server has yielded its configs (checked by the callback), then stop as the operator does."""
    server = ScriptedServer(*urls)
    settings = kopf.OperatorSettings()
    settings.admission.server = server
    settings.admission.managed = managed
    task = asyncio.create_task(webhookserving.serve_admission(
        registry=registry, settings=settings, client=api, memo=kopf.Memo(),  # type: ignore[arg-type]
        memo_of=lambda body: None, indices={}))
    await server.yielded.wait()
    await asyncio.sleep(0)  # let the last config be applied
    server.served_conversion = api.conversion() if api.crds else None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return server


async def test_managed_serving_points_the_crds_and_restores_them_at_exit(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    api = FakeCrdApi(CRD, 'others.kopf.dev')
    server = await serve_until_yielded(registry, api, 'auto.kopf.dev', 'https://one', 'https://two')
    assert server.served_conversion is not None
    assert server.served_conversion['webhook']['clientConfig'] == {'url': 'https://two/conversion'}
    assert api.conversion() == {'strategy': 'None'}
    assert api.annotations() == {}
    assert api.conversion('others.kopf.dev') == {'strategy': 'None'}
    # Only the CRDs: no admission configurations without admission handlers.
    assert {verb for verb, _ in api.requests} == {'scan', 'get', 'patch'}
    assert {name for verb, name in api.requests if verb != 'scan'} == {CRD}


async def test_unmanaged_serving_touches_no_crds(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    api = FakeCrdApi(CRD)
    await serve_until_yielded(registry, api, None, 'https://one')
    assert api.requests == [('scan', '*')]


async def test_admission_only_operators_touch_no_crds(
        registry: kopf.OperatorRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    kopf.on.validate('kopfexamples', registry=registry, id='fn')(fn)
    api = FakeCrdApi(CRD)
    applied: List[str] = []

    async def apply_configurations(*_: Any, **__: Any) -> None:
        applied.append('admission')  # tested in test_webhookconfigs.py; the CRDs are what matters here

    monkeypatch.setattr(webhookconfigs, 'apply_configurations', apply_configurations)
    await serve_until_yielded(registry, api, 'auto.kopf.dev', 'https://one')
    assert applied == ['admission', 'admission']  # when served, and at exit
    assert api.requests == [('scan', '*')]


async def test_the_servers_function_converts(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(lambda **_: {'spec': {'x': 1}})
    server = await serve_until_yielded(registry, FakeCrdApi(CRD), None, 'https://one')
    response = await server.fn({'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'ConversionReview', 'request': {
        'uid': 'u1', 'desiredAPIVersion': 'kopf.dev/v2',
        'objects': [{'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'k'}}]}},
        webhook='conversion')
    assert response['response']['convertedObjects'] == [
        {'apiVersion': 'kopf.dev/v2', 'kind': 'KopfExample', 'metadata': {'name': 'k'}, 'spec': {'x': 1}}]


# The setup.

def test_conversion_functions_without_a_server_are_refused_with_what_to_do(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(fn)
    with pytest.raises(kopf.AdmissionSetupError, match=r"^Conversion functions exist, but no webhook server is "
                                                       r"configured: set settings.admission.server"):
        webhookserving.check_setup(registry=registry, settings=kopf.OperatorSettings())


def test_no_handlers_need_no_server(registry: kopf.OperatorRegistry) -> None:
    kopf.on.create('kopfexamples', registry=registry)(fn)
    webhookserving.check_setup(registry=registry, settings=kopf.OperatorSettings())
    assert not webhookserving.is_needed(registry)
