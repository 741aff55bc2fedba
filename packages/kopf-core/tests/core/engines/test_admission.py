"""
Admission reviews: parsing, handler selection, kwargs, and the verdicts built from the outcomes.

Inputs: reviews as the apiservers send them (``admission.k8s.io/v1``) and
handlers registered with the public decorators into a private registry. Not
mocked: the engine itself, the handlers' invocation, the JSON-patch encoding.
"""
import base64
import json
import logging
from typing import Any, Dict, List

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.references import Resource
from kopf._core.engines.webhooks.admission import AdmissionContext, AdmissionFn, MalformedReviewError

KOPFEXAMPLES = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', singular='kopfexample',
                        shortcuts=frozenset({'kex'}), namespaced=True)

OBJECT = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
          'metadata': {'name': 'kex1', 'namespace': 'ns1', 'uid': 'uid1', 'labels': {'app': 'x'}},
          'spec': {'field': 'value'}}


def review(**overrides: Any) -> Dict[str, Any]:
    request: Dict[str, Any] = {
        'uid': 'req-1',
        'kind': {'group': 'kopf.dev', 'version': 'v1', 'kind': 'KopfExample'},
        'resource': {'group': 'kopf.dev', 'version': 'v1', 'resource': 'kopfexamples'},
        'name': 'kex1', 'namespace': 'ns1', 'operation': 'CREATE',
        'userInfo': {'username': 'admin', 'groups': ['system:masters']},
        'object': OBJECT, 'oldObject': None, 'dryRun': False,
    }
    request.update(overrides)
    return {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview', 'request': request}


@pytest.fixture()
def registry() -> kopf.OperatorRegistry:
    return kopf.OperatorRegistry()


@pytest.fixture()
def memo() -> kopf.Memo:
    return kopf.Memo(shared='operator')


@pytest.fixture()
def known_memo() -> kopf.Memo:
    return kopf.Memo(shared='object')


@pytest.fixture()
def admission(registry: kopf.OperatorRegistry, memo: kopf.Memo, known_memo: kopf.Memo) -> AdmissionFn:
    return AdmissionFn(AdmissionContext(
        registry=registry, settings=OperatorSettings(), memo=memo,
        memo_of=lambda body: known_memo if body.get('metadata', {}).get('uid') == 'uid1' else None,
        indices={'idx1': {'key': 'indexed'}},
        resources={('kopf.dev', 'v1', 'kopfexamples'): KOPFEXAMPLES}))


def decoded_patch(response: Any) -> List[Dict[str, Any]]:
    assert response['response']['patchType'] == 'JSONPatch'
    result: List[Dict[str, Any]] = json.loads(base64.b64decode(response['response']['patch']))
    return result


# Kwargs.

async def test_all_kwargs_of_a_creation(admission: AdmissionFn, registry: kopf.OperatorRegistry,
                                        memo: kopf.Memo, known_memo: kopf.Memo) -> None:
    seen: Dict[str, Any] = {}

    @kopf.on.validate('kex', registry=registry, id='fn', param=123)
    def fn(**kwargs: Any) -> None:
        seen.update(kwargs)

    headers = {'Authorization': 'Bearer abc'}
    sslpeer = {'subject': ((('commonName', 'apiserver'),),)}
    await admission(review(dryRun=True), webhook='fn', headers=headers, sslpeer=sslpeer)  # type: ignore[arg-type]
    assert seen['body'] == OBJECT
    assert seen['spec'] == {'field': 'value'}
    assert seen['meta']['name'] == 'kex1'
    assert seen['name'] == 'kex1'
    assert seen['namespace'] == 'ns1'
    assert seen['labels'] == {'app': 'x'}
    assert seen['old'] is None
    assert seen['new'] == OBJECT
    assert seen['resource'] is KOPFEXAMPLES
    assert seen['param'] == 123
    assert seen['dryrun'] is True
    assert seen['warnings'] == []
    assert seen['userinfo'] == {'username': 'admin', 'groups': ['system:masters']}
    assert seen['headers'] == headers
    assert seen['sslpeer'] == sslpeer
    assert seen['subresource'] is None
    assert seen['operation'] == 'CREATE'
    assert seen['idx1'] == {'key': 'indexed'}
    assert isinstance(seen['patch'], kopf.Patch)
    assert isinstance(seen['logger'], logging.LoggerAdapter)
    # A creation's memo is a throwaway copy of the operator's memo, not the object's one.
    assert seen['memo'] is not memo and seen['memo'] is not known_memo
    assert seen['memo'].shared == 'operator'


async def test_kwargs_of_an_update_of_a_subresource(admission: AdmissionFn, registry: kopf.OperatorRegistry,
                                                    known_memo: kopf.Memo) -> None:
    seen: Dict[str, Any] = {}

    @kopf.on.validate('kex', registry=registry, id='fn', subresource='status')
    def fn(**kwargs: Any) -> None:
        seen.update(kwargs)

    old = dict(OBJECT, spec={'field': 'old'})
    await admission(review(operation='UPDATE', oldObject=old, subResource='status'), webhook='fn')  # type: ignore[arg-type]
    assert seen['old'] == old
    assert seen['new'] == OBJECT
    assert seen['operation'] == 'UPDATE'
    assert seen['subresource'] == 'status'
    assert seen['memo'] is known_memo
    assert seen['sslpeer'] == {}  # a mapping as in Kopf 1.45.2, so sslpeer.get('subject') works
    assert seen['headers'] == {}


async def test_deletion_sees_the_old_object_as_the_body(admission: AdmissionFn,
                                                         registry: kopf.OperatorRegistry) -> None:
    seen: Dict[str, Any] = {}

    @kopf.on.validate('kex', registry=registry, id='fn', operation='DELETE')
    def fn(**kwargs: Any) -> None:
        seen.update(kwargs)

    await admission(review(operation='DELETE', object=None, oldObject=OBJECT), webhook='fn')  # type: ignore[arg-type]
    assert seen['body'] == OBJECT
    assert seen['new'] is None


# Selection.

@pytest.mark.parametrize('options, overrides, called', [
    pytest.param({}, {}, True, id='plain'),
    pytest.param({'operation': 'UPDATE'}, {}, False, id='other-operation'),
    pytest.param({'operations': ['CREATE', 'UPDATE']}, {}, True, id='operations'),
    pytest.param({}, {'subResource': 'status'}, False, id='subresource-unwanted'),
    pytest.param({'subresource': '*'}, {'subResource': 'status'}, True, id='subresource-star'),
    pytest.param({'subresource': 'scale'}, {'subResource': 'status'}, False, id='subresource-other'),
    pytest.param({'labels': {'app': 'x'}}, {}, True, id='labels-match'),
    pytest.param({'labels': {'app': 'y'}}, {}, False, id='labels-mismatch'),
    pytest.param({'annotations': {'a': kopf.PRESENT}}, {}, False, id='annotations-mismatch'),
    pytest.param({'field': 'spec.field', 'value': 'value'}, {}, True, id='field-value-match'),
    pytest.param({'field': 'spec.field', 'value': 'other'}, {}, False, id='field-value-mismatch'),
    pytest.param({'when': lambda spec, **_: spec['field'] == 'value'}, {}, True, id='when-true'),
    pytest.param({'when': lambda **_: False}, {}, False, id='when-false'),
])
async def test_handler_selection(admission: AdmissionFn, registry: kopf.OperatorRegistry,
                                 options: Dict[str, Any], overrides: Dict[str, Any], called: bool) -> None:
    calls: List[str] = []
    kopf.on.validate('kopfexamples', registry=registry, id='fn', **options)(
        lambda **_: calls.append('called'))
    response = await admission(review(**overrides))  # type: ignore[arg-type]
    assert calls == (['called'] if called else [])
    assert response['response']['allowed'] is True


async def test_only_the_named_webhook_runs(admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    calls: List[str] = []
    kopf.on.validate('kopfexamples', registry=registry, id='a')(lambda **_: calls.append('a'))
    kopf.on.validate('kopfexamples', registry=registry, id='b')(lambda **_: calls.append('b'))
    await admission(review(), webhook='b')  # type: ignore[arg-type]
    assert calls == ['b']
    await admission(review())  # type: ignore[arg-type]
    assert calls == ['b', 'a', 'b']


async def test_other_resources_are_not_handled(admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    calls: List[str] = []
    kopf.on.validate('pods', registry=registry, id='fn')(lambda **_: calls.append('called'))
    await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert calls == []


# Verdicts.

async def test_allowed_response_echoes_the_uid_and_the_api_version(admission: AdmissionFn) -> None:
    response = await admission(review())  # type: ignore[arg-type]
    assert response == {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
                        'response': {'uid': 'req-1', 'allowed': True}}


async def test_warnings_reach_the_response(admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    @kopf.on.validate('kex', registry=registry, id='fn')
    def fn(warnings: List[str], **_: Any) -> None:
        warnings.append('first')
        warnings.append('second')

    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert response['response']['warnings'] == ['first', 'second']
    assert response['response']['allowed'] is True


async def test_admission_error_denies_with_its_code_and_message(
        admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    @kopf.on.validate('kex', registry=registry, id='fn')
    def fn(**_: Any) -> None:
        raise kopf.AdmissionError("Numbers must be below 0..100.", code=499)

    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert response['response']['allowed'] is False
    assert response['response']['status'] == {'message': "Numbers must be below 0..100.", 'code': 499}


async def test_arbitrary_errors_deny_with_code_500(admission: AdmissionFn, registry: kopf.OperatorRegistry,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    @kopf.on.validate('kex', registry=registry, id='fn')
    def fn(**_: Any) -> None:
        raise ZeroDivisionError("boom")

    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert response['response']['allowed'] is False
    assert response['response']['status'] == {'message': 'boom', 'code': 500}
    assert "Webhook 'fn' failed with an exception." in caplog.text


@pytest.mark.parametrize('exceptions, expected', [
    pytest.param([ValueError('v'), kopf.TemporaryError('t'), kopf.PermanentError('p'),
                  kopf.AdmissionError('a', code=400)], 'a', id='admission-first'),
    pytest.param([ValueError('v'), kopf.TemporaryError('t'), kopf.PermanentError('p')], 'p', id='permanent'),
    pytest.param([ValueError('v'), kopf.TemporaryError('t')], 't', id='temporary'),
    pytest.param([ValueError('v'), KeyError('k')], 'v', id='arbitrary-first-one'),
])
async def test_error_precedence(admission: AdmissionFn, registry: kopf.OperatorRegistry,
                                exceptions: List[Exception], expected: str) -> None:
    for index, exception in enumerate(exceptions):
        def fn(exception: Exception = exception, **_: Any) -> None:
            raise exception
        kopf.on.validate('kex', registry=registry, id=f'fn{index}')(fn)
    response: Any = await admission(review())  # type: ignore[arg-type]
    assert response['response']['allowed'] is False
    assert response['response']['status']['message'] == expected


async def test_admission_error_without_a_code_is_500(admission: AdmissionFn,
                                                     registry: kopf.OperatorRegistry) -> None:
    @kopf.on.validate('kex', registry=registry, id='fn')
    def fn(**_: Any) -> None:
        raise kopf.AdmissionError("nope", code=None)

    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert response['response']['status'] == {'message': 'nope', 'code': 500}


async def test_mutation_is_a_base64_json_patch(admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    @kopf.on.mutate('kex', registry=registry, id='fn')
    def fn(patch: kopf.Patch, **_: Any) -> None:
        patch.spec['numbers'] = [1, 2, 3]
        patch.spec['field'] = None
        patch.meta.labels['added'] = 'yes'

    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    ops = decoded_patch(response)
    assert {'op': 'add', 'path': '/spec/numbers', 'value': [1, 2, 3]} in ops
    assert {'op': 'remove', 'path': '/spec/field'} in ops
    assert {'op': 'add', 'path': '/metadata/labels/added', 'value': 'yes'} in ops


async def test_mutation_with_patch_fns(admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    @kopf.on.mutate('kex', registry=registry, id='fn')
    def fn(patch: kopf.Patch, **_: Any) -> None:
        patch.fns.append(lambda body: body['metadata'].setdefault('finalizers', []).append('x/y'))

    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert decoded_patch(response) == [{'op': 'add', 'path': '/metadata/finalizers', 'value': ['x/y']}]


async def test_no_changes_means_no_patch(admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    kopf.on.mutate('kex', registry=registry, id='fn')(lambda **_: None)
    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert 'patch' not in response['response']


async def test_unserialisable_patch_denies_and_is_logged(admission: AdmissionFn, registry: kopf.OperatorRegistry,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    @kopf.on.mutate('kex', registry=registry, id='fn')
    def fn(patch: kopf.Patch, **_: Any) -> None:
        patch.spec['when'] = object()

    response: Any = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert response['response']['allowed'] is False
    assert response['response']['status']['code'] == 500
    assert response['response']['status']['message'].startswith("The mutation's patch cannot be serialised")
    assert 'patch' not in response['response']
    assert "The admission patch cannot be serialised" in caplog.text
    # The engine keeps serving.
    kopf.on.validate('kex', registry=registry, id='other')(lambda **_: None)
    assert (await admission(review(), webhook='other'))['response']['allowed'] is True  # type: ignore[arg-type]


async def test_async_handlers_are_awaited(admission: AdmissionFn, registry: kopf.OperatorRegistry) -> None:
    @kopf.on.validate('kex', registry=registry, id='fn')
    async def fn(warnings: List[str], **_: Any) -> None:
        warnings.append('async')

    response = await admission(review(), webhook='fn')  # type: ignore[arg-type]
    assert response['response']['warnings'] == ['async']


# Bad inputs.

@pytest.mark.parametrize('payload, message', [
    pytest.param([], "must be a JSON object", id='not-an-object'),
    pytest.param({'kind': 'Pod', 'request': {}}, "not an AdmissionReview", id='wrong-kind'),
    pytest.param({'kind': 'AdmissionReview'}, "no 'request' object", id='no-request'),
    pytest.param(review(uid=None), "no 'uid'", id='no-uid'),
    pytest.param(review(operation='PATCH'), "operation is unknown: 'PATCH'", id='bad-operation'),
    pytest.param(review(resource='pods'), "no 'resource' object", id='bad-resource'),
    pytest.param(review(object=[1]), "'object' must be an object or null", id='bad-object'),
    # The fields that the framework itself reads (the security issue, §4): not a 500 with a traceback.
    pytest.param(review(object={'metadata': 'x'}), "'object' has metadata that is not an object: str",
                 id='metadata-not-an-object'),
    pytest.param(review(operation='UPDATE', oldObject={'metadata': None}),
                 "'oldObject' has metadata that is not an object: NoneType", id='old-metadata-null'),
    pytest.param(review(kind='x'), "'kind' must be an object or null", id='kind-not-an-object'),
    pytest.param(review(kind={'kind': []}), r"kind\.kind must be a string, not list", id='kind-not-a-string'),
    pytest.param(review(resource={'group': [], 'version': 'v1', 'resource': 'kopfexamples'}),
                 r"resource\.group must be a string, not list", id='group-not-a-string'),
    pytest.param(review(namespace={}), r"request\.namespace must be a string, not dict", id='namespace-not-a-string'),
    pytest.param(review(subResource=1), r"request\.subResource must be a string, not int",
                 id='subresource-not-a-string'),
])
async def test_malformed_reviews_are_refused(admission: AdmissionFn, registry: kopf.OperatorRegistry,
                                             payload: Any, message: str, caplog: pytest.LogCaptureFixture) -> None:
    kopf.on.validate('kex', registry=registry, id='fn', labels={'app': 'x'})(lambda **_: None)
    with caplog.at_level(logging.DEBUG), pytest.raises(MalformedReviewError, match=message):
        await admission(payload)
    assert caplog.records == []


def nested(depth: int) -> Dict[str, Any]:
    value: Dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {'a': value}
    return value


@pytest.mark.parametrize('depth', [995, 2000])
async def test_deeply_nested_objects_are_refused_where_the_framework_recurses(
        admission: AdmissionFn, registry: kopf.OperatorRegistry, depth: int) -> None:
    @kopf.on.mutate('kex', registry=registry, id='fn')
    def fn(patch: kopf.Patch, **_: Any) -> None:
        patch.fns.append(lambda body: None)  # the framework copies the whole body to apply it

    deep = dict(OBJECT, spec=nested(depth))
    with pytest.raises(MalformedReviewError, match=r"^The admission review is nested too deeply to be processed\.$"):
        await admission(review(object=deep), webhook='fn')  # type: ignore[arg-type]


def test_malformed_review_error_is_a_value_error() -> None:
    # The servers answer ValueErrors with "400 Bad Request": it is a part of the protocol.
    assert issubclass(MalformedReviewError, ValueError)


def test_admission_error_is_a_permanent_error_with_a_code() -> None:
    error = kopf.AdmissionError("msg", code=400)
    assert isinstance(error, kopf.PermanentError)
    assert error.code == 400
    assert str(error) == "msg"
    assert kopf.AdmissionError().code == 500


def test_public_review_types() -> None:
    assert kopf.UserInfo.__annotations__.keys() >= {'username', 'uid', 'groups'}
    assert kopf.WebhookClientConfig.__annotations__.keys() >= {'url', 'caBundle', 'service'}
    assert kopf.WebhookClientConfigService.__annotations__.keys() >= {'namespace', 'name', 'path', 'port'}
