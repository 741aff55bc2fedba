"""
Conversion reviews: parsing, converting every object (directly or through chains), and the results.

Inputs: reviews as the apiservers send them (``apiextensions.k8s.io/v1``) and
functions registered with ``@kopf.on.convert`` into a private registry. Not
mocked: the engine itself, the functions' invocation, the dispatching of the
reviews by kind. The discovered resources are given as a dict (and a rescan
that counts its calls).
"""
import dataclasses
import logging
from typing import Any, Dict, List, Tuple

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.references import Resource
from kopf._core.engines.webhooks.admission import AdmissionContext, AdmissionFn, MalformedReviewError
from kopf._core.engines.webhooks.conversion import ConversionContext, ConversionFn
from kopf._core.engines.webhooks.webhookserving import ReviewsFn

KOPFEXAMPLES_V1 = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', singular='kopfexample',
                           shortcuts=frozenset({'kex'}), namespaced=True, preferred=False)
KOPFEXAMPLES_V2 = Resource('kopf.dev', 'v2', 'kopfexamples', kind='KopfExample', singular='kopfexample',
                           shortcuts=frozenset({'kex'}), namespaced=True, preferred=True)

Object = Dict[str, Any]


def obj(version: str, name: str = 'kex1', **spec: Any) -> Object:
    return {'apiVersion': f'kopf.dev/{version}', 'kind': 'KopfExample',
            'metadata': {'name': name, 'namespace': 'ns1', 'uid': f'uid-{name}', 'labels': {'app': 'x'}},
            'spec': spec}


def review(desired: str, *objects: Object, uid: str = 'req-1') -> Dict[str, Any]:
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'ConversionReview',
            'request': {'uid': uid, 'desiredAPIVersion': desired, 'objects': list(objects)}}


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
def resources() -> Dict[Tuple[str, str, str], Resource]:
    return {('kopf.dev', 'v1', 'kopfexamples'): KOPFEXAMPLES_V1, ('kopf.dev', 'v2', 'kopfexamples'): KOPFEXAMPLES_V2}


@pytest.fixture()
def rescans() -> List[str]:
    return []


@pytest.fixture()
def conversion(registry: kopf.OperatorRegistry, memo: kopf.Memo, known_memo: kopf.Memo,
               resources: Dict[Tuple[str, str, str], Resource], rescans: List[str]) -> ConversionFn:
    async def rescan() -> None:
        rescans.append('rescanned')
    return ConversionFn(ConversionContext(
        registry=registry, settings=OperatorSettings(), memo=memo,
        memo_of=lambda body: known_memo if body.get('metadata', {}).get('uid') == 'uid-known' else None,
        indices={'idx1': {'key': 'indexed'}}, resources=resources, rescan=rescan))


def v1_to_v2(body: kopf.Body, **_: Any) -> Object:
    return {'metadata': dict(body.metadata), 'spec': {'items': [body.spec['item']]}}


def v2_to_v1(body: kopf.Body, **_: Any) -> Object:
    return {'metadata': dict(body.metadata), 'spec': {'item': body.spec['items'][0]}}


def v2_to_v3(body: kopf.Body, **_: Any) -> Object:
    return {'metadata': dict(body.metadata), 'spec': {'entries': [{'value': v} for v in body.spec['items']]}}


def register_both_ways(registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2', registry=registry)(v1_to_v2)
    kopf.on.convert('kopf.dev', 'kopfexamples', source='v2', target='v1', registry=registry)(v2_to_v1)


# Successes.

async def test_object_is_converted_with_the_api_version_set_and_the_uid_echoed(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    register_both_ways(registry)
    response = await conversion(review('kopf.dev/v2', obj('v1', item='a'), uid='abc-123'))
    assert response == {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'ConversionReview',
        'response': {'uid': 'abc-123', 'result': {'status': 'Success'},
                     'convertedObjects': [dict(obj('v2'), spec={'items': ['a']})]}}


async def test_conversion_back_uses_the_other_function(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    register_both_ways(registry)
    response = await conversion(review('kopf.dev/v1', obj('v2', items=['b'])))
    assert response['response']['convertedObjects'] == [dict(obj('v1'), spec={'item': 'b'})]


async def test_several_objects_are_converted_in_order(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    register_both_ways(registry)
    objects = [obj('v1', 'one', item='1'), obj('v2', 'two', items=['2']), obj('v1', 'three', item='3')]
    response = await conversion(review('kopf.dev/v2', *objects))
    converted = response['response']['convertedObjects']
    assert [o['metadata']['name'] for o in converted] == ['one', 'two', 'three']
    assert [o['spec'] for o in converted] == [{'items': ['1']}, {'items': ['2']}, {'items': ['3']}]
    assert {o['apiVersion'] for o in converted} == {'kopf.dev/v2'}


async def test_objects_in_the_desired_version_are_returned_as_they_are(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    calls: List[str] = []
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(lambda **_: calls.append('x'))
    response = await conversion(review('kopf.dev/v2', obj('v2', items=['z'])))
    assert response['response']['convertedObjects'] == [obj('v2', items=['z'])]
    assert calls == []


async def test_empty_review_succeeds_with_no_objects(conversion: ConversionFn) -> None:
    response = await conversion(review('kopf.dev/v2'))
    assert dict(response['response']) == {'uid': 'req-1', 'convertedObjects': [], 'result': {'status': 'Success'}}


async def test_chain_of_functions_converts_through_the_intermediate_version(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    seen: List[str] = []

    @kopf.on.convert('kopfexamples', source='v2', target='v3', registry=registry)
    def second(body: kopf.Body, **kwargs: Any) -> Object:
        seen.append(body['apiVersion'])
        return v2_to_v3(body, **kwargs)

    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(v1_to_v2)
    response = await conversion(review('kopf.dev/v3', obj('v1', item='c')))
    assert seen == ['kopf.dev/v2']  # the next function gets the object in its own source version
    assert response['response']['convertedObjects'] == [dict(obj('v3'), spec={'entries': [{'value': 'c'}]})]


async def test_kind_and_metadata_are_kept_when_not_returned(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(
        lambda body, **_: {'spec': {'items': [body['spec']['item']]}})
    response = await conversion(review('kopf.dev/v2', obj('v1', item='d')))
    assert response['response']['convertedObjects'] == [dict(obj('v2'), spec={'items': ['d']})]


async def test_async_functions_are_awaited(conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    @kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)
    async def converted(body: kopf.Body, **_: Any) -> Object:
        return {'spec': {'async': True}}

    response = await conversion(review('kopf.dev/v2', obj('v1')))
    assert response['response']['convertedObjects'][0]['spec'] == {'async': True}


async def test_all_kwargs(conversion: ConversionFn, registry: kopf.OperatorRegistry, memo: kopf.Memo) -> None:
    seen: Dict[str, Any] = {}

    @kopf.on.convert('kex', source='v1', target='v2', registry=registry, param=7)
    def fn(**kwargs: Any) -> Object:
        seen.update(kwargs)
        return {}

    headers = {'Authorization': 'Bearer abc'}
    await conversion(review('kopf.dev/v2', obj('v1', item='e')), headers=headers)
    assert seen['body'] == obj('v1', item='e')
    assert seen['spec'] == {'item': 'e'}
    assert (seen['name'], seen['namespace'], seen['uid']) == ('kex1', 'ns1', 'uid-kex1')
    assert seen['labels'] == {'app': 'x'}
    assert (seen['source'], seen['target'], seen['param']) == ('v1', 'v2', 7)
    assert seen['resource'] is KOPFEXAMPLES_V2  # the preferred version, as the selectors see resources
    assert seen['headers'] == headers and seen['sslpeer'] == {}
    assert seen['idx1'] == {'key': 'indexed'}
    assert isinstance(seen['logger'], logging.LoggerAdapter)
    assert seen['memo'] is not memo and seen['memo'].shared == 'operator'  # a throwaway copy for the unknown


async def test_a_known_object_gets_its_own_memo(
        conversion: ConversionFn, registry: kopf.OperatorRegistry, known_memo: kopf.Memo) -> None:
    seen: Dict[str, Any] = {}
    kopf.on.convert('kex', source='v1', target='v2', registry=registry)(lambda memo, **_: seen.update(memo=memo))
    await conversion(review('kopf.dev/v2', obj('v1', 'known')))
    assert seen['memo'] is known_memo


# Failures: in the result, for kubectl to show.

async def test_missing_conversion_fails_naming_the_versions_and_what_to_register(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(v1_to_v2)
    response = await conversion(review('kopf.dev/v1', obj('v2', items=['f'])))
    assert dict(response['response']) == {'uid': 'req-1', 'convertedObjects': [], 'result': {
        'status': 'Failure',
        'message': "No conversion of KopfExample (kopf.dev) from v2 to v1: register one with "
                   "@kopf.on.convert('kopf.dev', 'kopfexamples', source='v2', target='v1'), or a chain of them."}}


@pytest.mark.parametrize('error', [
    pytest.param(kopf.PermanentError("The item is too long for v2."), id='permanent'),
    pytest.param(kopf.TemporaryError("The item is too long for v2."), id='temporary'),
    pytest.param(ValueError("The item is too long for v2."), id='arbitrary'),
])
async def test_exception_fails_the_review_with_its_message(
        conversion: ConversionFn, registry: kopf.OperatorRegistry, error: Exception) -> None:
    def failing(**_: Any) -> None:
        raise error
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(failing)
    response = await conversion(review('kopf.dev/v2', obj('v1')))
    assert response['response']['result'] == {'status': 'Failure', 'message': "The item is too long for v2."}
    assert response['response']['convertedObjects'] == []


async def test_one_failed_object_fails_all_and_stops_there(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    calls: List[str] = []

    @kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)
    def picky(name: str, **_: Any) -> Object:
        calls.append(name)
        if name == 'bad':
            raise kopf.PermanentError(f"{name} cannot be converted.")
        return {}

    response = await conversion(review('kopf.dev/v2', obj('v1', 'good'), obj('v1', 'bad'), obj('v1', 'late')))
    assert response['response']['result'] == {'status': 'Failure', 'message': "bad cannot be converted."}
    assert response['response']['convertedObjects'] == []
    assert calls == ['good', 'bad']


async def test_exception_without_a_message_fails_with_its_type(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    def failing(**_: Any) -> None:
        raise KeyError()
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry)(failing)
    response = await conversion(review('kopf.dev/v2', obj('v1')))
    assert response['response']['result'] == {'status': 'Failure', 'message': 'KeyError'}


async def test_returning_no_object_fails_with_what_to_return(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry, id='lazy')(lambda **_: None)
    response = await conversion(review('kopf.dev/v2', obj('v1')))
    assert response['response']['result'] == {
        'status': 'Failure',
        'message': "Conversion 'lazy' returned NoneType instead of the object in v2: "
                   "return the converted object (a dict)."}


async def test_returning_an_unserialisable_object_fails(
        conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    kopf.on.convert('kopfexamples', source='v1', target='v2', registry=registry, id='odd')(
        lambda **_: {'spec': {'when': object()}})
    response = await conversion(review('kopf.dev/v2', obj('v1')))
    assert response['response']['result']['status'] == 'Failure'
    assert response['response']['result']['message'].startswith(
        "Conversion 'odd' returned an object that cannot be serialised to JSON: ")


async def test_conversion_to_another_group_fails(conversion: ConversionFn, registry: kopf.OperatorRegistry) -> None:
    register_both_ways(registry)
    response = await conversion(review('other.dev/v2', obj('v1')))
    assert response['response']['result'] == {
        'status': 'Failure',
        'message': "KopfExample of kopf.dev/v1 cannot be converted to another API group: other.dev/v2."}


# Resources: found by group & kind, rescanned once if unknown.

async def test_unknown_kind_rescans_the_resources_once(
        conversion: ConversionFn, registry: kopf.OperatorRegistry, rescans: List[str],
        resources: Dict[Tuple[str, str, str], Resource]) -> None:
    kopf.on.convert('kopf.dev', 'newthings', source='v1', target='v2', registry=registry)(lambda **_: {})
    newthing = {'apiVersion': 'kopf.dev/v1', 'kind': 'NewThing', 'metadata': {'name': 'n1'}}

    async def rescan() -> None:  # the CRD appeared after the start
        rescans.append('rescanned')
        resources[('kopf.dev', 'v1', 'newthings')] = Resource('kopf.dev', 'v1', 'newthings', kind='NewThing')

    conversion.context = dataclasses.replace(conversion.context, rescan=rescan)
    first = await conversion(review('kopf.dev/v2', newthing))
    second = await conversion(review('kopf.dev/v2', newthing))
    assert first['response']['result'] == second['response']['result'] == {'status': 'Success'}
    assert rescans == ['rescanned']


async def test_unknown_kind_is_not_rescanned_again_soon(
        conversion: ConversionFn, rescans: List[str]) -> None:
    unknown = {'apiVersion': 'kopf.dev/v1', 'kind': 'Unknown', 'metadata': {'name': 'n1'}}
    first = await conversion(review('kopf.dev/v2', unknown))
    second = await conversion(review('kopf.dev/v2', unknown))
    assert rescans == ['rescanned']
    assert first['response']['result']['status'] == second['response']['result']['status'] == 'Failure'
    assert "register one with @kopf.on.convert('kopf.dev', 'Unknown', source='v1', target='v2')" in \
        second['response']['result']['message']


# Malformed reviews: errors for the servers to answer with 400.

@pytest.mark.parametrize('request_, message', [
    pytest.param([], "The conversion review must be a JSON object.", id='not-an-object'),
    pytest.param({'kind': 'ConversionReview'}, "The conversion review has no 'request' object.", id='no-request'),
    pytest.param({'kind': 'ConversionReview', 'request': {'desiredAPIVersion': 'kopf.dev/v2', 'objects': []}},
                 "The conversion review's request has no 'uid'.", id='no-uid'),
    pytest.param({'kind': 'ConversionReview', 'request': {'uid': 'u', 'objects': []}},
                 "The conversion review's desiredAPIVersion must be 'group/version', not None.", id='no-desired'),
    pytest.param({'kind': 'ConversionReview', 'request': {'uid': 'u', 'desiredAPIVersion': 'v1', 'objects': []}},
                 "The conversion review's desiredAPIVersion must be 'group/version', not 'v1'.", id='core-desired'),
    pytest.param({'kind': 'ConversionReview', 'request': {'uid': 'u', 'desiredAPIVersion': 'kopf.dev/v2'}},
                 "The conversion review's request has no 'objects' list.", id='no-objects'),
    pytest.param({'kind': 'ConversionReview', 'request': {'uid': 'u', 'desiredAPIVersion': 'kopf.dev/v2',
                                                          'objects': ['x']}},
                 "The conversion review's objects[0] is not an object.", id='object-not-an-object'),
    pytest.param({'kind': 'ConversionReview', 'request': {'uid': 'u', 'desiredAPIVersion': 'kopf.dev/v2',
                                                          'objects': [{'kind': 'KopfExample'}]}},
                 "The conversion review's objects[0] has no apiVersion 'group/version': None.", id='no-apiversion'),
    pytest.param({'kind': 'ConversionReview', 'request': {'uid': 'u', 'desiredAPIVersion': 'kopf.dev/v2',
                                                          'objects': [{'apiVersion': 'kopf.dev/v1'}]}},
                 "The conversion review's objects[0] has no kind.", id='no-kind'),
])
async def test_malformed_reviews_are_refused_with_one_clear_message(
        conversion: ConversionFn, request_: Any, message: str) -> None:
    with pytest.raises(MalformedReviewError) as err:
        await conversion(request_)
    assert str(err.value) == message
    assert isinstance(err.value, ValueError)  # what the servers answer with 400


# Dispatching: one server, both kinds of reviews.

@pytest.fixture()
def reviews_fn(registry: kopf.OperatorRegistry, conversion: ConversionFn) -> ReviewsFn:
    admission = AdmissionFn(AdmissionContext(registry=registry, settings=OperatorSettings(), memo=kopf.Memo(),
                                             memo_of=lambda _: None, indices={}, resources={}))
    return ReviewsFn(admission=admission, conversion=conversion)


async def test_conversion_reviews_go_to_the_conversion_functions_whatever_the_path(
        reviews_fn: ReviewsFn, registry: kopf.OperatorRegistry) -> None:
    register_both_ways(registry)
    response: Any = await reviews_fn(review('kopf.dev/v2', obj('v1', item='g')), webhook='anything')  # type: ignore[arg-type]
    assert response['kind'] == 'ConversionReview'
    assert response['response']['convertedObjects'][0]['spec'] == {'items': ['g']}


async def test_admission_reviews_still_go_to_the_admission_handlers(
        reviews_fn: ReviewsFn, registry: kopf.OperatorRegistry) -> None:
    register_both_ways(registry)
    request = {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview', 'request': {
        'uid': 'adm-1', 'operation': 'CREATE', 'object': obj('v1'),
        'resource': {'group': 'kopf.dev', 'version': 'v1', 'resource': 'kopfexamples'}}}
    response = await reviews_fn(request, webhook='conversion')  # type: ignore[arg-type]
    assert response == {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
                        'response': {'uid': 'adm-1', 'allowed': True}}


async def test_other_payloads_are_refused_as_admission_reviews(reviews_fn: ReviewsFn) -> None:
    with pytest.raises(MalformedReviewError, match=r"not an AdmissionReview: kind='Something'"):
        await reviews_fn({'kind': 'Something', 'request': {}})  # type: ignore[typeddict-item]
