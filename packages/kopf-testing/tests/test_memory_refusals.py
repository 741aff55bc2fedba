"""What the in-memory API cannot do as the real API server does, it refuses: with a message saying what to use."""
from typing import Any

import pytest

from kopf import clients
from kopf_testing import crd_manifest
from kopf_testing.memory import MemoryApi, MemoryClient, MemoryKube, UnsupportedByMemoryApi

NAMESPACES = clients.Resource('', 'v1', 'namespaces')


@pytest.fixture
def api() -> MemoryApi:
    api = MemoryApi()
    MemoryKube(api).apply_crd(crd_manifest('refusals.kopf.dev', 'widgets', 'Widget'))
    return api


def crd_with(**version_fields: Any) -> dict[str, Any]:
    crd = crd_manifest('other.kopf.dev', 'gadgets', 'Gadget')
    crd['spec']['versions'][0].update(version_fields)
    return crd


async def test_deleting_a_namespace_is_refused(api: MemoryApi) -> None:
    with pytest.raises(UnsupportedByMemoryApi, match=r'deleting namespaces .* \(--kopf-cluster=local\)'):
        await MemoryClient(api).delete_object(NAMESPACES, namespace=None, name='default')


async def test_propagation_policies_other_than_background_are_refused(api: MemoryApi) -> None:
    widgets = api.served_by_name('widgets').resource
    with pytest.raises(UnsupportedByMemoryApi, match="propagation policy 'Foreground'"):
        await MemoryClient(api).delete_object(widgets, namespace='default', name='x', propagation_policy='Foreground')


def test_schema_keywords_that_would_not_be_enforced_are_refused(api: MemoryApi) -> None:
    schema = {'type': 'object', 'properties': {'spec': {'type': 'object', 'properties': {
        'size': {'type': 'integer', 'minimum': 1}}}}}
    with pytest.raises(UnsupportedByMemoryApi, match=r'schema keywords minimum \(at .spec.size'):
        MemoryKube(api).apply_crd(crd_with(schema={'openAPIV3Schema': schema}))
    assert 'gadgets' not in {resource.plural for resource in api.scan()}


def test_crds_with_several_served_versions_are_refused(api: MemoryApi) -> None:
    crd = crd_manifest('other.kopf.dev', 'gadgets', 'Gadget')
    crd['spec']['versions'].append({**crd['spec']['versions'][0], 'name': 'v2', 'storage': False})
    with pytest.raises(UnsupportedByMemoryApi, match='2 served versions'):
        MemoryKube(api).apply_crd(crd)


def test_the_scale_subresource_is_refused(api: MemoryApi) -> None:
    with pytest.raises(UnsupportedByMemoryApi, match='subresources scale'):
        MemoryKube(api).apply_crd(crd_with(subresources={'status': {}, 'scale': {}}))


def test_strategic_merge_patches_are_refused(api: MemoryApi) -> None:
    kube = MemoryKube(api, 'default')
    kube.create({'apiVersion': 'refusals.kopf.dev/v1', 'kind': 'Widget', 'metadata': {'name': 'w'}})
    with pytest.raises(UnsupportedByMemoryApi, match='strategic patches'):
        kube.patch('widgets', 'w', {'spec': {}}, type='strategic')


def test_field_selectors_beyond_name_and_namespace_are_refused(api: MemoryApi) -> None:
    with pytest.raises(UnsupportedByMemoryApi, match=r"field selector 'spec\.size'"):
        MemoryKube(api, 'default').list('widgets', field_selector='spec.size=1')


def test_field_selectors_by_name_and_namespace_work(api: MemoryApi) -> None:
    kube = MemoryKube(api, 'default')
    for name in ['a', 'b']:
        kube.create({'apiVersion': 'refusals.kopf.dev/v1', 'kind': 'Widget', 'metadata': {'name': name}})
    assert [obj['metadata']['name'] for obj in kube.list('widgets', field_selector='metadata.name!=a')] == ['b']
    assert kube.list('widgets', field_selector='metadata.namespace=other') == []
