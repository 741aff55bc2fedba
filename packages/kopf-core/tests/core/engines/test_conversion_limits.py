"""
The cost of conversion reviews, their cap, and their malformed or deeply nested objects (the security issue, §3 and §4).

The attacks: one review of 95,000 small objects (~8 MiB) took 18.7 s of the
operator's CPU and wrote a DEBUG line per object; ``"metadata": "x"`` failed
the framework itself (a 500 and a traceback); an object nested 995 levels
deep, returned as it came, raised a ``RecursionError``.

The costs are measured as the CPU of the whole process (the worker threads
included), as a ratio to a trivial loop over the same objects in the same
test: never as absolute times, which depend on the machine and its load.
"""
import concurrent.futures
import json
import logging
import time
from typing import Any, Callable, Dict, List, Tuple

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.references import Resource
from kopf._core.engines.webhooks.admission import MalformedReviewError
from kopf._core.engines.webhooks.conversion import ConversionContext, ConversionFn
from kopf._core.engines.webhooks.conversionreviews import MAX_OBJECTS

KOPFEXAMPLES = Resource('kopf.dev', 'v2', 'kopfexamples', kind='KopfExample', preferred=True)

Object = Dict[str, Any]


def small_objects(count: int, version: str = 'v1') -> List[Object]:
    """As in the attack: ~90 bytes each, so that 95,000 of them are about 8 MiB."""
    return [{'apiVersion': f'kopf.dev/{version}', 'kind': 'KopfExample',
             'metadata': {'name': f'kex{i}'}, 'spec': {'item': i}} for i in range(count)]


def review(*objects: Object, desired: str = 'kopf.dev/v2') -> Dict[str, Any]:
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'ConversionReview',
            'request': {'uid': 'req-1', 'desiredAPIVersion': desired, 'objects': list(objects)}}


def v1_to_v2(body: kopf.Body, **_: Any) -> Object:
    return {'metadata': body['metadata'], 'spec': {'items': [body['spec']['item']]}}


@pytest.fixture()
def settings() -> OperatorSettings:
    return OperatorSettings()


@pytest.fixture()
def conversion(settings: OperatorSettings) -> ConversionFn:
    registry = kopf.OperatorRegistry()
    kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2', registry=registry)(v1_to_v2)
    return ConversionFn(ConversionContext(
        registry=registry, settings=settings, memo=kopf.Memo(), memo_of=lambda _: None, indices={},
        resources={('kopf.dev', 'v2', 'kopfexamples'): KOPFEXAMPLES}))


def cpu_of(fn: Callable[[], Any], *, repeats: int = 3) -> float:
    """The least CPU time of the process (all threads) of a few runs: the least disturbed by the machine."""
    times: List[float] = []
    for _ in range(repeats):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return min(times)


def trivial_loop(objects: List[Object]) -> None:
    """What a review's conversion cannot do without: a call of the function per object, the JSON of all."""
    converted = [v1_to_v2(body=raw) for raw in objects]  # type: ignore[arg-type]
    json.dumps(converted)


# Cost.

async def test_a_full_review_costs_a_few_times_a_trivial_loop(conversion: ConversionFn) -> None:
    objects = small_objects(MAX_OBJECTS)
    reference = cpu_of(lambda: trivial_loop(objects))
    spent: List[float] = []
    for _ in range(3):
        request = review(*small_objects(MAX_OBJECTS))
        started = time.process_time()
        response = await conversion(request)
        spent.append(time.process_time() - started)
        assert response['response']['result'] == {'status': 'Success'}
        assert len(response['response']['convertedObjects']) == MAX_OBJECTS
    # Measured: 9-12 times on a loaded machine (with a deep copy and a thread hop per object: 60-80 times).
    assert min(spent) < 25 * reference


async def test_the_attack_of_95k_objects_is_refused_before_any_work(conversion: ConversionFn) -> None:
    objects = small_objects(95_000)
    reference = cpu_of(lambda: trivial_loop(objects), repeats=1)
    started = time.process_time()
    response = await conversion(review(*objects))
    spent = time.process_time() - started
    assert response['response']['result'] == {
        'status': 'Failure',
        'message': f"The conversion review has 95000 objects, more than the limit of {MAX_OBJECTS} per review: "
                   f"none is converted."}
    assert response['response']['convertedObjects'] == []
    assert spent < reference / 10


async def test_the_cap_is_inclusive_and_adjustable(conversion: ConversionFn) -> None:
    conversion.max_objects = 3
    accepted = await conversion(review(*small_objects(3)))
    refused = await conversion(review(*small_objects(4)))
    assert accepted['response']['result'] == {'status': 'Success'}
    assert refused['response']['result']['status'] == 'Failure'
    assert "4 objects, more than the limit of 3 per review" in refused['response']['result']['message']


async def test_a_refused_review_is_one_warning(conversion: ConversionFn, caplog: pytest.LogCaptureFixture) -> None:
    conversion.max_objects = 3
    with caplog.at_level(logging.DEBUG):
        await conversion(review(*small_objects(4)))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ('WARNING', "A conversion review is refused: The conversion review has 4 objects, more than the limit "
                    "of 3 per review: none is converted.")]


async def test_one_debug_line_per_review_not_per_object(
        conversion: ConversionFn, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        response = await conversion(review(*small_objects(1000)))
    assert response['response']['result'] == {'status': 'Success'}
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage().startswith("Converted 1000 objects to kopf.dev/v2 in ")


class CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(*args, **kwargs)


async def test_sync_functions_of_a_review_are_called_in_one_thread_hop(
        conversion: ConversionFn, settings: OperatorSettings) -> None:
    executor = settings.execution.executor = CountingExecutor()
    try:
        response = await conversion(review(*small_objects(100)))
    finally:
        executor.shutdown()
    assert len(response['response']['convertedObjects']) == 100
    assert executor.submitted == 1


async def test_objects_are_given_to_the_functions_as_they_came(settings: OperatorSettings) -> None:
    seen: List[Tuple[Any, Any]] = []
    registry = kopf.OperatorRegistry()

    @kopf.on.convert('kopf.dev', 'kopfexamples', source='v1', target='v2', registry=registry)
    def in_place(body: kopf.Body, spec: kopf.Spec, **_: Any) -> Any:
        seen.append((body.raw, spec))
        body['spec']['items'] = [body['spec'].pop('item')]  # allowed: the object is not used for anything else
        return body

    conversion = ConversionFn(ConversionContext(
        registry=registry, settings=settings, memo=kopf.Memo(), memo_of=lambda _: None, indices={},
        resources={('kopf.dev', 'v2', 'kopfexamples'): KOPFEXAMPLES}))
    objects = small_objects(2)
    response = await conversion(review(*objects))
    assert [raw for raw, _ in seen] == objects and all(raw is obj for (raw, _), obj in zip(seen, objects, strict=True))
    assert [o['spec'] for o in response['response']['convertedObjects']] == [{'items': [0]}, {'items': [1]}]
    assert {o['apiVersion'] for o in response['response']['convertedObjects']} == {'kopf.dev/v2'}


# Malformed and deeply nested objects: refused (400 by the servers), never an error of the framework.

@pytest.mark.parametrize('metadata', ['x', None, 5, ['a']])
async def test_metadata_that_is_not_an_object_is_a_malformed_review(
        conversion: ConversionFn, metadata: Any, caplog: pytest.LogCaptureFixture) -> None:
    objects = small_objects(2)
    objects[1]['metadata'] = metadata
    with caplog.at_level(logging.DEBUG), pytest.raises(MalformedReviewError) as err:
        await conversion(review(*objects))
    assert str(err.value) == (f"The conversion review's objects[1] has metadata that is not an object: "
                              f"{type(metadata).__name__}.")
    assert caplog.records == []


def nested(depth: int) -> Object:
    value: Object = {}
    for _ in range(depth - 1):
        value = {'a': value}
    return value


@pytest.mark.parametrize('depth', [995, 2000])
async def test_deep_objects_returned_as_they_came_are_malformed_reviews(
        conversion: ConversionFn, depth: int) -> None:
    deep = dict(small_objects(1, 'v2')[0], spec=nested(depth))
    with pytest.raises(MalformedReviewError, match=r"^The conversion review is nested too deeply to be processed\.$"):
        await conversion(review(deep))


async def test_deep_objects_converted_by_a_function_are_malformed_reviews(conversion: ConversionFn) -> None:
    deep = dict(small_objects(1)[0], spec={'item': nested(995)})
    with pytest.raises(MalformedReviewError, match=r"nested too deeply"):
        await conversion(review(deep))
