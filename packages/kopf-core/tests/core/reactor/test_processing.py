"""
Processing of one event: the event handlers' changes are applied in every kind of cycle.

The change handlers do not run in some cycles (the object is out of scope, or
only the finalizer is added or released), but the event handlers have run
already by then: their patch must reach the API all the same. The API client
is a small recording fake of the client protocol's writer.
"""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import kopf
from kopf._cogs.clients.errors import APIUnprocessableEntityError
from kopf._cogs.clients.protocols import PatchType
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.helpers.typedefs import RawBody, RawEvent
from kopf._cogs.structs.patches import apply_merge_patch
from kopf._cogs.structs.references import Namespace, Resource
from kopf._core.engines.indexing import OperatorIndexers
from kopf._core.intents.registries import OperatorRegistry
from kopf._core.reactor.inventory import ObjectMemories
from kopf._core.reactor.processing import CycleResult, ProcessingContext, process_resource_event

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
        version = int(self.body['metadata']['resourceVersion']) + 1
        self.body = apply_merge_patch(self.body, {'metadata': {'resourceVersion': str(version)}})
        return self.body


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
                  event_type: Optional[str] = 'ADDED') -> CycleResult:
    indexers = OperatorIndexers()
    indexers.ready.set()
    context = ProcessingContext(registry=registry, settings=OperatorSettings(), client=client,  # type: ignore
                                memories=ObjectMemories(), memo=kopf.Memo(), indexers=indexers)
    return await process_resource_event(context=context, resource=RESOURCE,
                                        raw_event=RawEvent(type=event_type, object=client.body))  # type: ignore


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
