"""
Processing of one event: the event handlers' changes are applied in every kind of cycle.

The change handlers do not run in some cycles (the object is out of scope, or
only the finalizer is added or released), but the event handlers have run
already by then: their patch must reach the API all the same. The API client
is a small recording fake of the client protocol's writer.
"""
import asyncio
import copy
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pytest

import kopf
from kopf._cogs.clients.errors import APIUnprocessableEntityError
from kopf._cogs.clients.protocols import PatchType
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers.typedefs import RawBody, RawEvent
from kopf._cogs.structs.patches import apply_merge_patch
from kopf._cogs.structs.references import Namespace, Resource
from kopf._core.engines.indexing import OperatorIndexers
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.cycles import CycleResult, ProcessingContext
from kopf._core.reactor.inventory import ObjectMemories
from kopf._core.reactor.processing import process_resource_event

RESOURCE = Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'


class RecordingClient:
    """Records the patches; answers with the merge-patched body and the next resourceVersion."""

    def __init__(self, body: RawBody, *, json_conflicts: bool = False) -> None:
        self.body = body
        self.json_conflicts = json_conflicts
        self.patches: List[Tuple[PatchType, Any]] = []

    async def patch_object(
            self, resource: Resource, *, namespace: Namespace, name: str,
            patch: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
            patch_type: PatchType = PatchType.MERGE, subresource: Optional[str] = None,
    ) -> RawBody:
        self.patches.append((patch_type, patch))
        if patch_type == PatchType.JSON and self.json_conflicts:  # as if someone else has changed it
            raise APIUnprocessableEntityError(status=422, message="the test operation has failed")
        if patch_type == PatchType.MERGE:
            self.body = apply_merge_patch(self.body, patch)
        else:
            self.body = apply_finalizer_ops(self.body, patch)
        version = int(self.body['metadata']['resourceVersion']) + 1
        self.body = apply_merge_patch(self.body, {'metadata': {'resourceVersion': str(version)}})
        return self.body


def apply_finalizer_ops(body: RawBody, ops: Any) -> RawBody:
    """The framework's JSON patches of the finalizers take effect; the other operations are only recorded."""
    result = copy.deepcopy(body)
    finalizers = result['metadata'].setdefault('finalizers', [])
    for op in ops:
        if op['path'] == '/metadata/resourceVersion':  # the guard: as if nobody else has changed the object
            assert op['value'] == result['metadata']['resourceVersion']
        elif op['path'].startswith('/metadata/finalizers') and op['op'] == 'remove':
            finalizers.pop(int(op['path'].rpartition('/')[2]))
        elif op['path'].startswith('/metadata/finalizers') and op['op'] == 'add':
            finalizers.extend(op['value'] if isinstance(op['value'], list) else [op['value']])
    return result


def body_with(**metadata: Any) -> Dict[str, Any]:
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'spec': {},
            'metadata': {'name': 'obj', 'namespace': 'ns', 'uid': 'uid', 'resourceVersion': '100', **metadata}}


def add_item(body: RawBody, /) -> None:
    body.setdefault('spec', {}).setdefault('items', []).append('mine')


def patching_event_handler(registry: OperatorRegistry) -> None:
    @kopf.on.event('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def event_fn(patch: kopf.Patch, **_: Any) -> None:
        patch.metadata.labels['seen'] = 'yes'
        patch.fns.append(add_item)


async def process(registry: OperatorRegistry, client: RecordingClient,
                  event_type: Optional[str] = 'ADDED', lifecycle: Any = None,
                  settings: Optional[OperatorSettings] = None) -> CycleResult:
    indexers = OperatorIndexers()
    indexers.ready.set()
    settings = settings if settings is not None else OperatorSettings()
    context = ProcessingContext(registry=registry, settings=settings, client=client,  # type: ignore
                                memories=ObjectMemories(), memo=kopf.Memo(), indexers=indexers,
                                lifecycle=lifecycle)
    return await process_resource_event(context=context, resource=RESOURCE,
                                        raw_event=RawEvent(type=event_type, object=client.body))


def json_ops(client: RecordingClient) -> List[Any]:
    return [patch for patch_type, patch in client.patches if patch_type == PatchType.JSON]


async def test_event_handlers_changes_are_applied_to_objects_out_of_scope() -> None:
    registry = OperatorRegistry()
    patching_event_handler(registry)

    @kopf.on.create('kopf.dev', 'v1', 'kopfexamples', labels={'other': 'yes'}, registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    client = RecordingClient(body_with())
    await process(registry, client)
    assert client.patches[0] == (PatchType.MERGE, {'metadata': {'labels': {'seen': 'yes'}}})
    assert json_ops(client) == [[
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '101'},
        {'op': 'add', 'path': '/spec/items', 'value': ['mine']},
    ]]
    assert 'annotations' not in client.body['metadata']  # still in the stealth mode: no diff-base


async def test_event_handlers_changes_are_applied_after_the_finalizer_is_added() -> None:
    registry = OperatorRegistry()
    patching_event_handler(registry)

    @kopf.on.delete('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def delete_fn(**_: Any) -> None:
        pass

    client = RecordingClient(body_with())
    await process(registry, client)
    assert [patch_type for patch_type, _ in client.patches] == [PatchType.JSON, PatchType.MERGE, PatchType.JSON]
    assert client.patches[1] == (PatchType.MERGE, {'metadata': {'labels': {'seen': 'yes'}}})
    assert json_ops(client)[1][0] == {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '102'}


async def test_event_handlers_changes_are_applied_after_the_finalizer_is_released() -> None:
    registry = OperatorRegistry()
    patching_event_handler(registry)

    @kopf.on.create('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    client = RecordingClient(body_with(finalizers=[FINALIZER]))
    await process(registry, client)
    assert [patch_type for patch_type, _ in client.patches] == [PatchType.JSON, PatchType.MERGE, PatchType.JSON]
    assert json_ops(client)[0][1] == {'op': 'remove', 'path': '/metadata/finalizers/0'}
    assert client.patches[1] == (PatchType.MERGE, {'metadata': {'labels': {'seen': 'yes'}}})


async def test_nothing_is_patched_for_objects_gone_from_the_cluster() -> None:
    registry = OperatorRegistry()
    patching_event_handler(registry)

    @kopf.on.create('kopf.dev', 'v1', 'kopfexamples', labels={'other': 'yes'}, registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    client = RecordingClient(body_with())
    await process(registry, client, event_type='DELETED')
    assert client.patches == []


async def test_merge_patched_version_is_awaited_even_if_the_functions_are_rejected() -> None:
    # The events older than the merge-patched version (e.g. with no diff-base yet) are stale:
    # the worker must skip them, or it would handle the creation again.
    registry = OperatorRegistry()

    @kopf.on.create('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def create_fn(patch: kopf.Patch, **_: Any) -> None:
        patch.fns.append(add_item)

    client = RecordingClient(body_with(), json_conflicts=True)
    result = await process(registry, client)
    assert [patch_type for patch_type, _ in client.patches] == [PatchType.MERGE, PatchType.JSON]
    assert result.patched_body is not None
    assert result.patched_body['metadata']['resourceVersion'] == '101'


# Lifecycles: which of the due handlers run in one cycle.

def recording(calls: List[str], call: str) -> Any:
    return lambda **_: calls.append(call)


def calling_handlers(registry: OperatorRegistry, calls: List[str]) -> None:
    for call in ['a', 'b', 'c']:
        kopf.on.create('kopf.dev', 'v1', 'kopfexamples', id=call, registry=registry)(recording(calls, call))


async def test_the_default_lifecycle_runs_one_handler_per_cycle() -> None:
    registry, calls = OperatorRegistry(), list[str]()
    calling_handlers(registry, calls)
    result = await process(registry, RecordingClient(body_with()))
    assert calls == ['a']
    assert result.delay == 0  # the others are due at once, in the next cycle


async def test_the_operators_lifecycle_decides_for_the_top_level_handlers() -> None:
    registry, calls = OperatorRegistry(), list[str]()
    calling_handlers(registry, calls)
    result = await process(registry, RecordingClient(body_with()), lifecycle=kopf.lifecycles.all_at_once)
    assert calls == ['a', 'b', 'c']
    assert result.delay is None


def parent_with_children(registry: OperatorRegistry, calls: List[str], lifecycle: Any = None) -> None:
    @kopf.on.create('kopf.dev', 'v1', 'kopfexamples', id='parent', registry=registry)
    async def parent(**_: Any) -> None:
        fns = {call: recording(calls, call) for call in ['a', 'b', 'c']}
        await kopf.execute(fns=fns, lifecycle=lifecycle)


async def test_sub_handlers_inherit_the_operators_lifecycle() -> None:
    registry, calls = OperatorRegistry(), list[str]()
    parent_with_children(registry, calls)
    await process(registry, RecordingClient(body_with()), lifecycle=kopf.lifecycles.all_at_once)
    assert calls == ['a', 'b', 'c']


async def test_sub_handlers_follow_the_lifecycle_given_to_kopf_execute() -> None:
    registry, calls = OperatorRegistry(), list[str]()
    parent_with_children(registry, calls, lifecycle=kopf.lifecycles.one_by_one)
    await process(registry, RecordingClient(body_with()), lifecycle=kopf.lifecycles.all_at_once)
    assert calls == ['a']


# The cycles of one object's life, step by step: the requests of each cycle, and what it leaves behind.

def life_handlers(registry: OperatorRegistry, calls: List[str]) -> None:
    kopf.on.create('kopf.dev', 'v1', 'kopfexamples', id='create', registry=registry)(recording(calls, 'create'))
    kopf.on.update('kopf.dev', 'v1', 'kopfexamples', id='update', registry=registry)(recording(calls, 'update'))
    kopf.on.delete('kopf.dev', 'v1', 'kopfexamples', id='delete', registry=registry)(recording(calls, 'delete'))


async def test_an_objects_life_takes_one_request_per_step() -> None:
    registry, calls = OperatorRegistry(), list[str]()
    life_handlers(registry, calls)
    client = RecordingClient(body_with())
    indexers = OperatorIndexers()
    indexers.ready.set()
    context = ProcessingContext(registry=registry, settings=OperatorSettings(), client=client,  # type: ignore
                                memories=ObjectMemories(), memo=kopf.Memo(), indexers=indexers)

    async def cycle(event_type: Optional[str] = 'MODIFIED') -> CycleResult:
        return await process_resource_event(context=context, resource=RESOURCE,
                                            raw_event=RawEvent(type=event_type, object=client.body))

    await cycle('ADDED')  # the finalizer first, nothing else
    assert client.body['metadata']['finalizers'] == [FINALIZER] and calls == [] and len(client.patches) == 1

    result = await cycle()  # the creation: the handler, then its outcome and the diff-base in one patch
    assert calls == ['create'] and len(client.patches) == 2 and result.delay is None
    assert 'kopf.zalando.org/last-handled-configuration' in client.body['metadata']['annotations']

    await cycle()  # nothing has changed: no handler, no request
    assert calls == ['create'] and len(client.patches) == 2

    client.body = apply_merge_patch(client.body, {'spec': {'field': 'new'}})
    await cycle()  # the update: one patch with the new diff-base
    assert calls == ['create', 'update'] and len(client.patches) == 3

    client.body = apply_merge_patch(client.body, {'metadata': {'deletionTimestamp': '2020-01-01T00:00:00Z'}})
    await cycle()  # the deletion: the handler, then the finalizer's release (no state to write)
    assert calls == ['create', 'update', 'delete']
    assert client.patches[-1][0] == PatchType.JSON and client.body['metadata']['finalizers'] == []


async def test_a_deleted_object_with_no_finalizer_of_ours_is_left_alone() -> None:
    registry, calls = OperatorRegistry(), list[str]()
    life_handlers(registry, calls)
    client = RecordingClient(body_with(deletionTimestamp='2020-01-01T00:00:00Z', finalizers=['someone/else']))
    result = await process(registry, client, event_type='MODIFIED')
    assert calls == [] and client.patches == [] and result == CycleResult()


# Daemons through the cycles: spawned for a live object, stopped on deletion before the deletion handlers.

@pytest.mark.looptime
async def test_the_deletion_waits_for_the_daemons_to_exit() -> None:
    registry, calls = OperatorRegistry(), list[str]()
    exited = asyncio.Event()

    @kopf.daemon('kopf.dev', 'v1', 'kopfexamples', registry=registry, cancellation_timeout=None)
    async def daemon_fn(stopped: kopf.AsyncDaemonStopperChecker, **_: Any) -> None:
        calls.append('daemon started')
        await stopped.wait()
        await asyncio.sleep(2.5)  # a slow exit: the deletion must wait for it
        calls.append('daemon exited')
        exited.set()

    kopf.on.delete('kopf.dev', 'v1', 'kopfexamples', id='delete', registry=registry)(recording(calls, 'delete'))
    client = RecordingClient(body_with())
    indexers = OperatorIndexers()
    indexers.ready.set()
    context = ProcessingContext(registry=registry, settings=OperatorSettings(), client=client,  # type: ignore
                                memories=ObjectMemories(), memo=kopf.Memo(), indexers=indexers)

    async def cycle() -> CycleResult:
        return await process_resource_event(context=context, resource=RESOURCE,
                                            raw_event=RawEvent(type='MODIFIED', object=client.body))

    await cycle()  # the finalizer
    await cycle()  # the daemon is spawned
    await asyncio.sleep(0.1)
    assert calls == ['daemon started']

    client.body = apply_merge_patch(client.body, {'metadata': {'deletionTimestamp': '2020-01-01T00:00:00Z'}})
    result = await cycle()
    assert result.delay is not None and calls == ['daemon started']  # come back later: the daemon still runs
    await exited.wait()
    await cycle()
    assert calls == ['daemon started', 'daemon exited', 'delete']
    assert client.body['metadata']['finalizers'] == []


async def test_the_finalizer_is_named_by_the_settings() -> None:
    registry = OperatorRegistry()

    @kopf.on.delete('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def delete_fn(**_: Any) -> None:
        pass

    settings = OperatorSettings()
    settings.persistence.finalizer = 'example.com/my-finalizer'
    client = RecordingClient(body_with())
    await process(registry, client, settings=settings)
    added = [op['value'] for ops in json_ops(client) for op in ops if op['op'] == 'add']
    assert added == [['example.com/my-finalizer']]


class RejectingClient(RecordingClient):
    """Rejects every merge-patch as the API server rejects an object with too big annotations."""

    async def patch_object(self, resource: Resource, *, namespace: Namespace, name: str,
                           patch: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
                           patch_type: PatchType = PatchType.MERGE, subresource: Optional[str] = None,
                           ) -> RawBody:
        self.patches.append((patch_type, patch))
        raise APIUnprocessableEntityError(status=422, message=(
            'KopfExample.kopf.dev "obj" is invalid: metadata.annotations: Too long: '
            'may not be more than 262144 bytes'))


async def test_a_rejected_state_is_reported_once_and_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    # Retrying the same rejected patch would re-run the succeeded handlers in a loop.
    registry = OperatorRegistry()

    @kopf.on.create('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    client = RejectingClient(body_with())
    with caplog.at_level(logging.ERROR):
        result = await process(registry, client)
    assert result.delay is None and result.patched_body is None
    assert len(client.patches) == 1
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None
    assert "The object's new state was rejected by the API server" in errors[0].message
    assert 'kopf.StatusDiffBaseStorage()' in errors[0].message


async def test_an_unstorable_result_does_not_spoil_the_handlers_success(caplog: pytest.LogCaptureFixture) -> None:
    registry = OperatorRegistry()

    @kopf.on.create('kopf.dev', 'v1', 'kopfexamples', registry=registry)
    def create_fn(**_: Any) -> object:
        return {'what': object()}

    client = RecordingClient(body_with())
    with caplog.at_level(logging.ERROR):
        result = await process(registry, client)
    assert result.delay is None
    assert 'create_fn' not in client.body.get('status', {})
    assert 'kopf.zalando.org/last-handled-configuration' in client.body['metadata']['annotations']
    assert ["succeeded, but its result cannot be stored in the status" in r.message
            for r in caplog.records if r.levelno >= logging.ERROR] == [True]
