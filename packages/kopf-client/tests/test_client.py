"""
The protocol's object operations mapped to Kubernetes REST calls.

Checked by what the server receives (method, path, query, headers, body)
and by what the client returns from the server's scripted answers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import kopf
from kopf import clients
from kopf_client import AiohttpClient

if TYPE_CHECKING:
    from conftest import FakeApi

PODS = kopf.Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
KEX = kopf.Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', namespaced=True)
NODES = kopf.Resource('', 'v1', 'nodes', kind='Node', namespaced=False)


async def test_getting_an_object(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex1', {'metadata': {'name': 'kex1'}})
    body = await client.get_object(KEX, namespace='ns', name='kex1')
    assert body == {'metadata': {'name': 'kex1'}}
    assert api.requests[0].method == 'GET'


async def test_getting_an_absent_object_raises_not_found(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/api/v1/nodes/node1', {'kind': 'Status', 'code': 404, 'reason': 'NotFound'}, status=404)
    with pytest.raises(clients.APINotFoundError) as err:
        await client.get_object(NODES, namespace=None, name='node1')
    assert err.value.reason == 'NotFound'


async def test_listing_returns_the_page_and_its_resource_version(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/api/v1/namespaces/ns/pods', {
        'apiVersion': 'v1', 'kind': 'PodList',
        'metadata': {'resourceVersion': '123'},
        'items': [{'metadata': {'name': 'pod1'}}],
    })
    page = await client.list_objects(PODS, namespace='ns')
    assert page.resource_version == '123'
    assert page.continue_token is None
    assert [item['metadata']['name'] for item in page.items] == ['pod1']


async def test_listed_items_get_api_version_and_kind(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/apis/kopf.dev/v1/kopfexamples', {
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExampleList', 'metadata': {'resourceVersion': '1'},
        'items': [{'metadata': {'name': 'kex1'}}],
    })
    page = await client.list_objects(KEX, namespace=None)
    assert page.items == [{'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'kex1'}}]


async def test_listed_items_get_the_kind_from_the_list_if_the_resource_has_none(
        api: FakeApi, client: AiohttpClient,
) -> None:
    kindless = kopf.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True)
    api.add('/apis/kopf.dev/v1/kopfexamples', {
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExampleList', 'metadata': {'resourceVersion': '1'},
        'items': [{'metadata': {'name': 'kex1'}}],
    })
    page = await client.list_objects(kindless, namespace=None)
    assert page.items[0]['kind'] == 'KopfExample'


async def test_listing_sends_the_limit_and_the_label_selector(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/api/v1/pods', {'metadata': {'resourceVersion': '1'}, 'items': []})
    await client.list_objects(PODS, namespace=None, limit=50, label_selector='app=x,tier!=db')
    assert api.requests[0].query == {'limit': '50', 'labelSelector': 'app=x,tier!=db'}


async def test_pagination_passes_the_continue_token_as_is(api: FakeApi, client: AiohttpClient) -> None:
    token = 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ+/=='  # base64 characters that need quoting
    api.add('/api/v1/pods', {'metadata': {'resourceVersion': '100', 'continue': token},
                             'items': [{'metadata': {'name': 'pod1'}}]})
    api.add('/api/v1/pods', {'metadata': {'resourceVersion': '100'},
                             'items': [{'metadata': {'name': 'pod2'}}]})
    page1 = await client.list_objects(PODS, namespace=None, limit=1)
    page2 = await client.list_objects(PODS, namespace=None, limit=1, continue_token=page1.continue_token)
    assert page1.continue_token == token
    assert page2.continue_token is None
    assert api.requests[1].query == {'limit': '1', 'continue': token}
    assert [item['metadata']['name'] for page in [page1, page2] for item in page.items] == ['pod1', 'pod2']


async def test_listing_with_an_expired_continue_token_raises_gone(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/api/v1/pods', {'kind': 'Status', 'code': 410, 'reason': 'Expired'}, status=410)
    with pytest.raises(clients.APIGoneError):
        await client.list_objects(PODS, namespace=None, continue_token='old')


async def test_creating_an_object(api: FakeApi, client: AiohttpClient) -> None:
    created = {'metadata': {'name': 'kex1', 'uid': 'u1'}}
    api.add('/apis/kopf.dev/v1/namespaces/ns/kopfexamples', created, status=201)
    body = await client.create_object(KEX, namespace='ns', body={'metadata': {'name': 'kex1'}})
    assert body == created
    assert api.requests[0].method == 'POST'
    assert api.requests[0].headers['Content-Type'] == 'application/json'
    assert api.requests[0].json() == {'metadata': {'name': 'kex1'}}


async def test_creating_an_existing_object_raises_conflict(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/apis/kopf.dev/v1/namespaces/ns/kopfexamples',
            {'kind': 'Status', 'code': 409, 'reason': 'AlreadyExists'}, status=409)
    with pytest.raises(clients.APIConflictError):
        await client.create_object(KEX, namespace='ns', body={'metadata': {'name': 'kex1'}})


@pytest.mark.parametrize('patch, patch_type, content_type', [
    pytest.param({'spec': {'x': 1}}, clients.PatchType.MERGE, 'application/merge-patch+json', id='merge'),
    pytest.param([{'op': 'add', 'path': '/spec/x', 'value': 1}], clients.PatchType.JSON,
                 'application/json-patch+json', id='json'),
])
async def test_patching_an_object(
        api: FakeApi, client: AiohttpClient,
        patch: object, patch_type: clients.PatchType, content_type: str,
) -> None:
    api.add('/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex1', {'spec': {'x': 1}})
    body = await client.patch_object(KEX, namespace='ns', name='kex1', patch=patch,  # type: ignore[arg-type]
                                     patch_type=patch_type)
    assert body == {'spec': {'x': 1}}
    assert api.requests[0].method == 'PATCH'
    assert api.requests[0].headers['Content-Type'] == content_type
    assert api.requests[0].json() == patch


async def test_patching_the_status_subresource(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex1/status', {'status': {'x': 1}})
    body = await client.patch_object(KEX, namespace='ns', name='kex1', patch={'status': {'x': 1}},
                                     subresource='status')
    assert body == {'status': {'x': 1}}
    assert api.requests[0].path.endswith('/kex1/status')


async def test_patching_with_a_failed_test_operation_raises_unprocessable(
        api: FakeApi, client: AiohttpClient,
) -> None:
    api.add('/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex1',
            {'kind': 'Status', 'code': 422, 'reason': 'Invalid', 'message': 'the test failed'}, status=422)
    with pytest.raises(clients.APIUnprocessableEntityError, match='the test failed'):
        await client.patch_object(KEX, namespace='ns', name='kex1', patch_type=clients.PatchType.JSON,
                                  patch=[{'op': 'test', 'path': '/metadata/resourceVersion', 'value': '1'}])


async def test_deleting_an_object(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/api/v1/namespaces/ns/pods/pod1', {'kind': 'Status', 'status': 'Success'})
    await client.delete_object(PODS, namespace='ns', name='pod1')
    assert api.requests[0].method == 'DELETE'
    assert api.requests[0].query == {}


async def test_deleting_with_a_propagation_policy(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/api/v1/namespaces/ns/pods/pod1', {'kind': 'Status', 'status': 'Success'})
    await client.delete_object(PODS, namespace='ns', name='pod1', propagation_policy='Foreground')
    assert api.requests[0].query == {'propagationPolicy': 'Foreground'}


async def test_deleting_an_absent_object_is_not_an_error(api: FakeApi, client: AiohttpClient) -> None:
    api.add('/api/v1/namespaces/ns/pods/pod1', {'kind': 'Status', 'code': 404}, status=404)
    await client.delete_object(PODS, namespace='ns', name='pod1')
    assert len(api.requests) == 1


async def test_server_path_prefix_is_kept(api: FakeApi, settings: kopf.OperatorSettings) -> None:
    vault = clients.Vault({'proxied': kopf.ConnectionInfo(server=f'{api.url}/k8s/clusters/c1/')})
    api.add('/k8s/clusters/c1/api/v1/nodes/node1', {'metadata': {'name': 'node1'}})
    async with AiohttpClient(vault=vault, settings=settings) as client:
        body = await client.get_object(NODES, namespace=None, name='node1')
    assert body == {'metadata': {'name': 'node1'}}
