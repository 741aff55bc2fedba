"""
Labelling, owning, naming, namespacing the children: the manual's "Hierarchies".

The children are raw dicts and small stand-ins of the 3rd-party objects
(pykube-ng's ``.obj`` holders and the Kubernetes client's models).
The owner is either passed explicitly or set as the current body.
"""
import sys
import types
from collections.abc import Iterator
from typing import Any, Optional

import pytest

from kopf._cogs.structs import bodies, dicts, hierarchies

OWNER_RAW = {
    'apiVersion': 'kopf.dev/v1',
    'kind': 'KopfExample',
    'metadata': {
        'name': 'kopf-example-1',
        'namespace': 'default',
        'uid': 'uid-1',
        'labels': {'somelabel': 'somevalue'},
    },
}
CLUSTER_OWNER_RAW = {
    'apiVersion': 'kopf.dev/v1',
    'kind': 'ClusterKopfExample',
    'metadata': {'name': 'cluster-example', 'uid': 'uid-2'},
}
OWNER_REF = {
    'controller': True,
    'blockOwnerDeletion': True,
    'apiVersion': 'kopf.dev/v1',
    'kind': 'KopfExample',
    'name': 'kopf-example-1',
    'uid': 'uid-1',
}


@pytest.fixture()
def owner() -> bodies.Body:
    return bodies.Body(OWNER_RAW)


@pytest.fixture()
def current_owner(owner: bodies.Body) -> Iterator[bodies.Body]:
    token = hierarchies.current_body.set(owner)
    yield owner
    hierarchies.current_body.reset(token)


def test_object_references_include_the_namespace_of_namespaced_objects(owner: bodies.Body) -> None:
    assert hierarchies.build_object_reference(owner) == {
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
        'name': 'kopf-example-1', 'uid': 'uid-1', 'namespace': 'default',
    }


def test_object_references_omit_the_absent_fields() -> None:
    assert hierarchies.build_object_reference({'kind': 'Node', 'metadata': {'name': 'n1'}}) == {
        'kind': 'Node', 'name': 'n1',
    }


def test_owner_references_have_the_fields_in_the_manual_order(owner: bodies.Body) -> None:
    ref = hierarchies.build_owner_reference(owner)
    assert ref == OWNER_REF
    assert list(ref) == ['controller', 'blockOwnerDeletion', 'apiVersion', 'kind', 'name', 'uid']


def test_owner_references_of_cluster_scoped_owners_have_no_namespace() -> None:
    ref = hierarchies.build_owner_reference(bodies.Body(CLUSTER_OWNER_RAW))
    assert ref == {
        'controller': True, 'blockOwnerDeletion': True,
        'apiVersion': 'kopf.dev/v1', 'kind': 'ClusterKopfExample',
        'name': 'cluster-example', 'uid': 'uid-2',
    }


def test_owner_references_can_be_non_controlling_and_non_blocking(owner: bodies.Body) -> None:
    ref = hierarchies.build_owner_reference(owner, controller=False, block_owner_deletion=False)
    assert ref['controller'] is False
    assert ref['blockOwnerDeletion'] is False


def test_owner_references_are_appended_to_many_objects(owner: bodies.Body) -> None:
    objs: list[dict[str, Any]] = [{'kind': 'Job'}, {'kind': 'Deployment'}]
    hierarchies.append_owner_reference(objs, owner)
    assert objs == [
        {'kind': 'Job', 'metadata': {'ownerReferences': [OWNER_REF]}},
        {'kind': 'Deployment', 'metadata': {'ownerReferences': [OWNER_REF]}},
    ]


def test_owner_references_are_appended_once(owner: bodies.Body) -> None:
    obj: dict[str, Any] = {'metadata': {'ownerReferences': [{'uid': 'other'}]}}
    hierarchies.append_owner_reference(obj, owner)
    hierarchies.append_owner_reference(obj, owner)
    assert obj['metadata']['ownerReferences'] == [{'uid': 'other'}, OWNER_REF]


def test_owner_references_default_to_the_current_body(current_owner: bodies.Body) -> None:
    obj: dict[str, Any] = {}
    hierarchies.append_owner_reference(obj)
    assert obj == {'metadata': {'ownerReferences': [OWNER_REF]}}


def test_owners_must_be_explicit_outside_of_handlers() -> None:
    with pytest.raises(LookupError, match=r"Owner must be set explicitly"):
        hierarchies.append_owner_reference({})


def test_owner_references_are_removed_by_uid(owner: bodies.Body) -> None:
    obj = {'metadata': {'ownerReferences': [{'uid': 'other'}, dict(OWNER_REF, controller=False)]}}
    hierarchies.remove_owner_reference(obj, owner)
    assert obj == {'metadata': {'ownerReferences': [{'uid': 'other'}]}}


def test_removing_absent_owner_references_changes_nothing(owner: bodies.Body) -> None:
    obj: dict[str, Any] = {'kind': 'Job'}
    hierarchies.remove_owner_reference(obj, owner)
    assert obj == {'kind': 'Job'}


def test_labels_are_applied(current_owner: bodies.Body) -> None:
    objs: list[dict[str, Any]] = [{'kind': 'Job'}, {'kind': 'Deployment'}]
    hierarchies.label(objs, {'label1': 'value1', 'label2': 'value2'})
    assert objs == [
        {'kind': 'Job', 'metadata': {'labels': {'label1': 'value1', 'label2': 'value2'}}},
        {'kind': 'Deployment', 'metadata': {'labels': {'label1': 'value1', 'label2': 'value2'}}},
    ]


@pytest.mark.parametrize('kwargs', [
    pytest.param({}, id='omitted'),
    pytest.param({'labels': None}, id='none'),
])
def test_labels_default_to_the_owners_labels(current_owner: bodies.Body, kwargs: dict[str, Any]) -> None:
    obj: dict[str, Any] = {'kind': 'Job'}
    hierarchies.label(obj, **kwargs)
    assert obj == {'kind': 'Job', 'metadata': {'labels': {'somelabel': 'somevalue'}}}


def test_empty_labels_apply_nothing(current_owner: bodies.Body) -> None:
    obj: dict[str, Any] = {'kind': 'Job'}
    hierarchies.label(obj, {})
    assert obj == {'kind': 'Job'}


def test_existing_labels_are_kept_unless_forced(current_owner: bodies.Body) -> None:
    obj = {'metadata': {'labels': {'somelabel': 'existing'}}}
    hierarchies.label(obj, {'somelabel': 'new', 'label1': 'value1'})
    assert obj['metadata']['labels'] == {'somelabel': 'existing', 'label1': 'value1'}


@pytest.mark.parametrize('kwargs', [
    pytest.param({'forced': True}, id='forced'),
    pytest.param({'force': True}, id='force-deprecated'),
])
def test_existing_labels_are_overwritten_if_forced(current_owner: bodies.Body, kwargs: dict[str, Any]) -> None:
    obj = {'metadata': {'labels': {'somelabel': 'existing'}}}
    hierarchies.label(obj, {'somelabel': 'new'}, **kwargs)
    assert obj['metadata']['labels'] == {'somelabel': 'new'}


@pytest.mark.parametrize('nested', [
    pytest.param('spec.template', id='string'),
    pytest.param(['spec.template'], id='list'),
    pytest.param([('spec', 'template')], id='tuples'),
])
def test_labels_are_applied_to_the_existing_nested_structures_only(
        current_owner: bodies.Body, nested: str | list[dicts.FieldSpec],
) -> None:
    objs: list[dict[str, Any]] = [{'kind': 'Job'}, {'kind': 'Deployment', 'spec': {'template': {}}}]
    hierarchies.label(objs, {'label1': 'value1'}, nested=nested)
    assert objs == [
        {'kind': 'Job', 'metadata': {'labels': {'label1': 'value1'}}},
        {'kind': 'Deployment', 'metadata': {'labels': {'label1': 'value1'}},
         'spec': {'template': {'metadata': {'labels': {'label1': 'value1'}}}}},
    ]


def test_naming_by_default_requests_a_generated_name(current_owner: bodies.Body) -> None:
    objs: list[dict[str, Any]] = [{'kind': 'Job'}, {'kind': 'Deployment'}]
    hierarchies.harmonize_naming(objs)
    assert objs == [
        {'kind': 'Job', 'metadata': {'generateName': 'kopf-example-1-'}},
        {'kind': 'Deployment', 'metadata': {'generateName': 'kopf-example-1-'}},
    ]


def test_strict_naming_uses_the_exact_name(current_owner: bodies.Body) -> None:
    obj: dict[str, Any] = {'kind': 'Job'}
    hierarchies.harmonize_naming(obj, 'some-name', strict=True)
    assert obj == {'kind': 'Job', 'metadata': {'name': 'some-name'}}


@pytest.mark.parametrize('meta', [
    pytest.param({'name': 'existing'}, id='name'),
    pytest.param({'generateName': 'existing-'}, id='generateName'),
])
def test_existing_names_are_kept_unless_forced(current_owner: bodies.Body, meta: dict[str, str]) -> None:
    obj = {'metadata': dict(meta)}
    hierarchies.harmonize_naming(obj, 'some-name', strict=True)
    assert obj == {'metadata': meta}


def test_forced_strict_naming_replaces_generated_names(current_owner: bodies.Body) -> None:
    obj = {'metadata': {'generateName': 'existing-'}}
    hierarchies.harmonize_naming(obj, forced=True, strict=True)
    assert obj == {'metadata': {'name': 'kopf-example-1'}}


def test_forced_non_strict_naming_replaces_exact_names(current_owner: bodies.Body) -> None:
    obj = {'metadata': {'name': 'existing'}}
    hierarchies.harmonize_naming(obj, 'some-name', forced=True)
    assert obj == {'metadata': {'generateName': 'some-name-'}}


def test_namespaces_default_to_the_owners_namespace(current_owner: bodies.Body) -> None:
    objs: list[dict[str, Any]] = [{'kind': 'Job'}, {'kind': 'Deployment'}]
    hierarchies.adjust_namespace(objs)
    assert objs == [
        {'kind': 'Job', 'metadata': {'namespace': 'default'}},
        {'kind': 'Deployment', 'metadata': {'namespace': 'default'}},
    ]


def test_existing_namespaces_are_kept_unless_forced(current_owner: bodies.Body) -> None:
    obj = {'metadata': {'namespace': 'existing'}}
    hierarchies.adjust_namespace(obj, 'namespace')
    assert obj == {'metadata': {'namespace': 'existing'}}


def test_existing_namespaces_are_replaced_if_forced(current_owner: bodies.Body) -> None:
    obj = {'metadata': {'namespace': 'existing'}}
    hierarchies.adjust_namespace(obj, 'namespace', forced=True)
    assert obj == {'metadata': {'namespace': 'namespace'}}


def test_cluster_scoped_owners_imply_no_namespace() -> None:
    token = hierarchies.current_body.set(bodies.Body(CLUSTER_OWNER_RAW))
    try:
        obj: dict[str, Any] = {'kind': 'Job'}
        hierarchies.adjust_namespace(obj, forced=True)
        assert obj == {'kind': 'Job'}
    finally:
        hierarchies.current_body.reset(token)


def test_adopting_does_everything_in_the_manual_order(current_owner: bodies.Body) -> None:
    objs: list[dict[str, Any]] = [{'kind': 'Job'}, {'kind': 'Deployment'}]
    hierarchies.adopt(objs, strict=True, forced=True, nested='spec.template')
    expected_meta = {
        'ownerReferences': [OWNER_REF],
        'name': 'kopf-example-1',
        'namespace': 'default',
        'labels': {'somelabel': 'somevalue'},
    }
    assert objs == [{'kind': 'Job', 'metadata': expected_meta}, {'kind': 'Deployment', 'metadata': expected_meta}]
    assert list(objs[0]['metadata']) == list(expected_meta)


def test_adopting_by_a_cluster_scoped_owner_sets_no_namespace() -> None:
    obj: dict[str, Any] = {'kind': 'Job'}
    hierarchies.adopt(obj, bodies.Body(CLUSTER_OWNER_RAW))
    assert 'namespace' not in obj['metadata']
    assert obj['metadata']['ownerReferences'][0]['uid'] == 'uid-2'
    assert obj['metadata']['generateName'] == 'cluster-example-'


class _PykubeLikeObject:
    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj


def test_pykube_like_objects_are_modified_via_their_dicts(owner: bodies.Body) -> None:
    pod = _PykubeLikeObject({'kind': 'Pod'})
    hierarchies.adopt(pod, owner)
    assert pod.obj['metadata']['namespace'] == 'default'
    assert pod.obj['metadata']['ownerReferences'] == [OWNER_REF]


class _Model:
    openapi_types: dict[str, str] = {}
    attribute_map: dict[str, str] = {}

    def __init__(self, **kwargs: dict[str, Any]) -> None:
        for key, value in kwargs.items():
            setattr(self, key, value)


class V1ObjectMeta(_Model):
    labels: Optional[dict[str, str]] = None
    name: Optional[str] = None
    generate_name: Optional[str] = None
    namespace: Optional[str] = None
    owner_references: Optional[list[Any]] = None


class V1OwnerReference(_Model):
    api_version = kind = name = uid = controller = block_owner_deletion = None


class V1Pod(_Model):
    metadata: Optional[V1ObjectMeta] = None


@pytest.fixture()
def kubernetes_client(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType('kubernetes.client')
    module.__dict__.update(V1ObjectMeta=V1ObjectMeta, V1OwnerReference=V1OwnerReference)
    monkeypatch.setitem(sys.modules, 'kubernetes.client', module)


def test_kubernetes_models_are_modified_via_their_attributes(kubernetes_client: None, owner: bodies.Body) -> None:
    pod = V1Pod()
    hierarchies.adopt(pod, owner)
    assert pod.metadata is not None
    assert pod.metadata.generate_name == 'kopf-example-1-'
    assert pod.metadata.namespace == 'default'
    assert pod.metadata.labels == {'somelabel': 'somevalue'}
    refs = pod.metadata.owner_references or []
    assert [type(ref) for ref in refs] == [V1OwnerReference]
    assert refs[0].uid == 'uid-1'
    assert refs[0].api_version == 'kopf.dev/v1'
    assert refs[0].block_owner_deletion is True


def test_unsupported_objects_are_refused(owner: bodies.Body) -> None:
    with pytest.raises(TypeError):
        hierarchies.adopt([object()], owner)
