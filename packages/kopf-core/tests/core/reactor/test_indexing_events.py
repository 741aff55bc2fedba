"""
Indexing in the watch-stream: the indices follow the objects' events (additions, changes,
filters, deletions, errors), and the gate for the handlers opens once every stream is listed.

The events go through the reactor's entry point (``index_resource_event``); the time is
fake (looptime) where the retries of failed indexing functions are waited for.
"""
import asyncio
from typing import Any, Dict, List, Optional

import pytest

import kopf
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers.typedefs import RawEvent
from kopf._cogs.structs.references import Resource
from kopf._core.engines.indexing import IndexingReadiness, OperatorIndex, OperatorIndexers
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.cycles import ProcessingContext
from kopf._core.reactor.inventory import ObjectMemories
from kopf._core.reactor.processing import index_resource_event

RESOURCE = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)


def raw_event(name: str, type: Optional[str] = 'MODIFIED', **labels: str) -> RawEvent:
    return RawEvent(type=type, object={
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
        'metadata': {'name': name, 'namespace': 'ns', 'uid': f'uid-{name}', 'labels': labels}})


def make_context(registry: OperatorRegistry) -> ProcessingContext:
    indexers = OperatorIndexers()
    indexers.ensure(registry)
    return ProcessingContext(registry=registry, settings=OperatorSettings(), client=None,  # type: ignore
                             memories=ObjectMemories(), memo=kopf.Memo(), indexers=indexers)


async def index(context: ProcessingContext, *events: RawEvent) -> Dict[Any, List[Any]]:
    for event in events:
        await index_resource_event(context=context, resource=RESOURCE, raw_event=event)
    return {key: sorted(store) for key, store in context.indexers.as_kwargs()['by_label'].items()}


def by_label(registry: OperatorRegistry, **options: Any) -> None:
    @kopf.index('kopf.dev', 'v1', 'kopfexamples', id='by_label', registry=registry, **options)
    def by_label(name: str, labels: Dict[str, str], **_: Any) -> Any:
        return {labels.get('app'): name}


async def test_objects_are_indexed_under_their_keys_and_moved_on_changes() -> None:
    registry = OperatorRegistry()
    by_label(registry)
    context = make_context(registry)
    assert await index(context, raw_event('a', app='x'), raw_event('b', app='x')) == {'x': ['a', 'b']}
    assert await index(context, raw_event('a', app='y')) == {'x': ['b'], 'y': ['a']}


async def test_deleted_objects_leave_the_index_and_empty_keys_are_removed() -> None:
    registry = OperatorRegistry()
    by_label(registry)
    context = make_context(registry)
    await index(context, raw_event('a', app='x'), raw_event('b', app='y'))
    assert await index(context, raw_event('a', type='DELETED')) == {'y': ['b']}


async def test_objects_that_stop_matching_the_filters_leave_the_index() -> None:
    registry = OperatorRegistry()
    by_label(registry, labels={'indexed': 'yes'})
    context = make_context(registry)
    assert await index(context, raw_event('a', app='x', indexed='yes')) == {'x': ['a']}
    assert await index(context, raw_event('a', app='x', indexed='no')) == {}


@pytest.mark.looptime
async def test_a_temporary_error_excludes_the_object_until_its_delay_is_over() -> None:
    registry = OperatorRegistry()
    attempts: List[float] = []

    @kopf.index('kopf.dev', 'v1', 'kopfexamples', id='by_label', registry=registry, errors=kopf.ErrorsMode.TEMPORARY)
    async def failing(name: str, **_: Any) -> Any:
        attempts.append(asyncio.get_running_loop().time())
        if len(attempts) == 1:
            raise kopf.TemporaryError('not yet', delay=10)
        return {'key': name}

    context = make_context(registry)
    assert await index(context, raw_event('a')) == {}
    assert await index(context, raw_event('a')) == {}  # within the delay: not even attempted
    await asyncio.sleep(10)
    assert await index(context, raw_event('a')) == {'key': ['a']}
    assert attempts == [0, 10]


async def test_a_permanent_error_excludes_the_object_until_it_is_deleted() -> None:
    registry = OperatorRegistry()
    calls: List[str] = []

    @kopf.index('kopf.dev', 'v1', 'kopfexamples', id='by_label', registry=registry)
    def failing(name: str, **_: Any) -> Any:
        calls.append(name)
        raise kopf.PermanentError('never')

    context = make_context(registry)
    await index(context, raw_event('a'), raw_event('a'))
    assert calls == ['a']
    await index(context, raw_event('a', type='DELETED'), raw_event('a'))
    assert calls == ['a', 'a']  # a new object under the same identity is indexed afresh


def test_non_dict_results_are_values_under_the_none_key() -> None:
    index = OperatorIndex()
    index.replace('obj', kopf.Memo(a=1))
    assert list(index.index) == [None] and list(index.index[None]) == [kopf.Memo(a=1)]


async def test_the_gate_opens_once_every_expected_stream_is_listed() -> None:
    indexers = OperatorIndexers()
    readiness = IndexingReadiness(indexers)
    readiness.mark_listed('one')
    readiness.expect(['one', 'two'])
    assert not indexers.ready.is_set()
    readiness.expect(['three'])  # only the first expectation counts
    readiness.mark_listed('two')
    assert indexers.ready.is_set()
