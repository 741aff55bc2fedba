"""
The framework's reviews through a real server: malformed, oversized, deeply nested (the security issue, §3, §4).

The server is real (plain HTTP on 127.0.0.1: the transport does not matter
here), and so is the framework's function: the admission and conversion
engines of kopf-core behind its dispatcher, with a conversion function and an
admission handler registered. The attacks: ``"metadata": "x"`` in a review
(a 500 and ~2 KB of traceback per 160-byte request), other reviews of a wrong
shape, an object nested 995 levels deep sent back as it came (a
``RecursionError`` outside the handler's ``try``), and a conversion review of
95,000 objects (18.7 s of CPU and a DEBUG line per object).
"""
from __future__ import annotations

import json
import logging
from typing import Any, Dict, List

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.references import Resource
from kopf._core.engines.webhooks.admission import AdmissionContext, AdmissionFn
from kopf._core.engines.webhooks.conversion import ConversionContext, ConversionFn
from kopf._core.engines.webhooks.webhookserving import ReviewsFn
from kopf_webhooks import WebhookServer

KOPFEXAMPLES = {('kopf.dev', 'v2', 'kopfexamples'): Resource('kopf.dev', 'v2', 'kopfexamples', kind='KopfExample',
                                                              preferred=True)}
RESOURCE = {'group': 'kopf.dev', 'version': 'v2', 'resource': 'kopfexamples'}


@pytest.fixture()
def fn() -> ReviewsFn:
    """The framework's function, as an operator serves it (overrides the recording fake)."""
    registry = kopf.OperatorRegistry()
    kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2', registry=registry)(
        lambda spec, **_: {'spec': {'items': [spec.get('item')]}})
    kopf.on.validate('kopf.dev', 'kopfexamples', registry=registry, id='validate1')(lambda **_: None)
    kwargs: Dict[str, Any] = dict(registry=registry, settings=OperatorSettings(), memo=kopf.Memo(),
                                  memo_of=lambda _: None, indices={}, resources=KOPFEXAMPLES)
    return ReviewsFn(admission=AdmissionFn(AdmissionContext(**kwargs)),
                     conversion=ConversionFn(ConversionContext(**kwargs)))


def conversion(*objects: Any, desired: str = 'kopf.dev/v2') -> Dict[str, Any]:
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'ConversionReview',
            'request': {'uid': 'u1', 'desiredAPIVersion': desired, 'objects': list(objects)}}


def admission(**request: Any) -> Dict[str, Any]:
    return {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
            'request': dict({'uid': 'u1', 'operation': 'CREATE', 'resource': RESOURCE}, **request)}


def kex(version: str = 'v1', **fields: Any) -> Dict[str, Any]:
    return dict({'apiVersion': f'kopf.dev/{version}', 'kind': 'KopfExample'}, **fields)


@pytest.mark.parametrize('path, review, what, reason', [
    pytest.param('/conversion', conversion(kex(metadata='x')), 'conversion',
                 "The conversion review's objects[0] has metadata that is not an object: str.", id='conv-metadata'),
    pytest.param('/conversion', {'kind': 'ConversionReview', 'request': {'uid': 'u1', 'objects': []}}, 'conversion',
                 "The conversion review's desiredAPIVersion must be 'group/version', not None.", id='conv-desired'),
    pytest.param('/conversion', conversion(kex(), 'x'), 'conversion',
                 "The conversion review's objects[1] is not an object.", id='conv-item'),
    pytest.param('/conversion', {'kind': 'ConversionReview', 'request': {'uid': 'u1', 'desiredAPIVersion': 'a/v1',
                                                                         'objects': {}}}, 'conversion',
                 "The conversion review's request has no 'objects' list.", id='conv-objects'),
    pytest.param('/validate1', conversion(kex(metadata='x')), 'conversion',  # dispatched by its kind, not path
                 "The conversion review's objects[0] has metadata that is not an object: str.", id='conv-path'),
    pytest.param('/validate1', admission(object=kex(metadata='x')), 'admission',
                 "The admission review's 'object' has metadata that is not an object: str.", id='adm-metadata'),
    pytest.param('/validate1', admission(kind='x', object=kex()), 'admission',
                 "The admission review's 'kind' must be an object or null.", id='adm-kind'),
    pytest.param('/validate1', admission(resource={'group': ['x']}), 'admission',
                 "The admission review's resource.group must be a string, not list.", id='adm-group'),
    pytest.param('/conversion', dict(admission(), kind='x'), 'admission',  # not a conversion review: admission's
                 "The payload is not an AdmissionReview: kind='x'.", id='adm-other-kind'),
])
async def test_malformed_reviews_are_400_with_the_reason_and_no_traceback(
        start: Any, post: Any, caplog: pytest.LogCaptureFixture, path: str, review: Any, what: str, reason: str,
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', insecure=True))
    with caplog.at_level(logging.DEBUG):
        reply = await post(client_config, path, data=json.dumps(review).encode())
    assert reply.status == 400
    assert reply.text == f"The {what} review is malformed: {reason}"
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING] == []
    assert len([r for r in caplog.records if r.name.startswith('kopf')]) <= 1


@pytest.mark.parametrize('kind, what', [('ConversionReview', 'conversion'), ('AdmissionReview', 'admission')])
async def test_reviews_without_a_request_are_400_naming_their_kind(
        start: Any, post: Any, kind: str, what: str,
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', insecure=True))
    reply = await post(client_config, '/conversion', data=json.dumps({'kind': kind, 'request': 'x'}).encode())
    assert reply.status == 400
    assert reply.text == f"The {what} review must be a JSON object with a 'request' object."


@pytest.mark.parametrize('depth', [900, 960, 995])
async def test_deep_objects_sent_back_as_they_came_are_400_without_traceback(
        start: Any, post: Any, caplog: pytest.LogCaptureFixture, depth: int,
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', insecure=True))
    # The object is `depth` levels deep, the review 3 levels more: within the parser's limit of 1,000.
    # Written as text: the test's own json.dumps() would be out of Python's stack already.
    spec = '{"a":' * (depth - 2) + '{}' + '}' * (depth - 2)
    obj = '{"apiVersion":"kopf.dev/v2","kind":"KopfExample","spec":' + spec + '}'
    data = json.dumps(conversion()).replace('"objects": []', f'"objects": [{obj}]').encode()
    with caplog.at_level(logging.DEBUG):
        reply = await post(client_config, '/conversion', data=data)
    # Either answered (if Python's stack allows it here), or refused cleanly: never a 500.
    assert reply.status in (200, 400)
    if reply.status == 400:
        assert reply.text.startswith("The conversion review is ") and "nested too deeply" in reply.text
        assert "admission" not in reply.text
    else:
        assert reply.text.count('{"a": ') == depth - 2
    assert [r for r in caplog.records if r.exc_info] == []
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) <= 1


async def test_the_attack_of_95k_objects_is_refused_naming_the_cap(
        start: Any, post: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    client_config = await start(WebhookServer(addr='127.0.0.1', insecure=True))
    objects: List[Any] = [kex(metadata={'name': f'k{i}'}) for i in range(95_000)]
    data = json.dumps(conversion(*objects), separators=(',', ':')).encode()
    assert 7 * 1024 * 1024 < len(data) < 8 * 1024 * 1024
    with caplog.at_level(logging.DEBUG):
        reply = await post(client_config, '/conversion', data=data)
    assert reply.status == 200
    assert reply.json()['response']['result'] == {
        'status': 'Failure',
        'message': "The conversion review has 95000 objects, more than the limit of 10000 per review: "
                   "none is converted."}
    assert [r.getMessage() for r in caplog.records if r.name.startswith('kopf')] == [
        "A conversion review is refused: The conversion review has 95000 objects, more than the limit of 10000 "
        "per review: none is converted."]
