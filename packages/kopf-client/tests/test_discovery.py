"""
The discovery of resources: the core API, the groups, their versions, subresources.

The fake server serves discovery documents shaped as a real API server's
(trimmed to the fields that matter).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection, Dict, List, Optional

import pytest

import kopf
from kopf import clients
from kopf_client import AiohttpClient

if TYPE_CHECKING:
    from conftest import FakeApi

CORE_V1 = {
    'kind': 'APIResourceList', 'groupVersion': 'v1',
    'resources': [
        {'name': 'pods', 'singularName': 'pod', 'namespaced': True, 'kind': 'Pod',
         'verbs': ['get', 'list', 'watch', 'patch'], 'shortNames': ['po'], 'categories': ['all']},
        {'name': 'pods/status', 'singularName': '', 'namespaced': True, 'kind': 'Pod', 'verbs': ['get', 'patch']},
        {'name': 'pods/log', 'singularName': '', 'namespaced': True, 'kind': 'Pod', 'verbs': ['get']},
        {'name': 'namespaces', 'singularName': '', 'namespaced': False, 'kind': 'Namespace',
         'verbs': ['get', 'list', 'watch'], 'shortNames': ['ns']},
    ],
}
GROUPS = {
    'kind': 'APIGroupList',
    'groups': [
        {'name': 'kopf.dev',
         'versions': [{'groupVersion': 'kopf.dev/v1', 'version': 'v1'},
                      {'groupVersion': 'kopf.dev/v1beta1', 'version': 'v1beta1'}],
         'preferredVersion': {'groupVersion': 'kopf.dev/v1', 'version': 'v1'}},
        {'name': 'metrics.k8s.io',
         'versions': [{'groupVersion': 'metrics.k8s.io/v1beta1', 'version': 'v1beta1'}],
         'preferredVersion': {'groupVersion': 'metrics.k8s.io/v1beta1', 'version': 'v1beta1'}},
    ],
}


def _kex_list(version: str) -> Dict[str, Any]:
    return {
        'kind': 'APIResourceList', 'groupVersion': f'kopf.dev/{version}',
        'resources': [
            {'name': 'kopfexamples', 'singularName': 'kopfexample', 'namespaced': True, 'kind': 'KopfExample',
             'verbs': ['list', 'watch', 'patch'], 'shortNames': ['kex'], 'categories': ['kopf']},
            {'name': 'kopfexamples/status', 'singularName': '', 'namespaced': True, 'kind': 'KopfExample',
             'verbs': ['patch']},
        ],
    }


def _serve_cluster(api: FakeApi, *, metrics_status: int = 200) -> None:
    api.add('/api/v1', CORE_V1)
    api.add('/apis', GROUPS)
    api.add('/apis/kopf.dev/v1', _kex_list('v1'))
    api.add('/apis/kopf.dev/v1beta1', _kex_list('v1beta1'))
    if metrics_status == 200:
        api.add('/apis/metrics.k8s.io/v1beta1', {'kind': 'APIResourceList', 'resources': [
            {'name': 'pods', 'singularName': '', 'namespaced': True, 'kind': 'PodMetrics', 'verbs': ['get']},
        ]})
    else:
        api.add('/apis/metrics.k8s.io/v1beta1', {'kind': 'Status', 'code': metrics_status}, status=metrics_status)


def _find(resources: Collection[kopf.Resource], group: str, version: str, plural: str) -> kopf.Resource:
    found = [r for r in resources if (r.group, r.version, r.plural) == (group, version, plural)]
    assert len(found) == 1, f"{group}/{version}/{plural} is found {len(found)} times"
    return found[0]


async def test_resources_of_all_groups_and_versions_are_found(api: FakeApi, client: AiohttpClient) -> None:
    _serve_cluster(api)
    resources = await client.scan_resources()
    assert {(r.group, r.version, r.plural) for r in resources} == {
        ('', 'v1', 'pods'),
        ('', 'v1', 'namespaces'),
        ('kopf.dev', 'v1', 'kopfexamples'),
        ('kopf.dev', 'v1beta1', 'kopfexamples'),
        ('metrics.k8s.io', 'v1beta1', 'pods'),
    }


async def test_resource_fields_are_filled(api: FakeApi, client: AiohttpClient) -> None:
    _serve_cluster(api)
    resources = await client.scan_resources()
    assert _find(resources, 'kopf.dev', 'v1', 'kopfexamples') == kopf.Resource(
        group='kopf.dev', version='v1', plural='kopfexamples',
        kind='KopfExample', singular='kopfexample',
        shortcuts=frozenset({'kex'}), categories=frozenset({'kopf'}),
        subresources=frozenset({'status'}),
        namespaced=True, preferred=True,
        verbs=frozenset({'list', 'watch', 'patch'}),
    )


async def test_only_the_preferred_version_is_marked_preferred(api: FakeApi, client: AiohttpClient) -> None:
    _serve_cluster(api)
    resources = await client.scan_resources()
    assert _find(resources, 'kopf.dev', 'v1', 'kopfexamples').preferred
    assert not _find(resources, 'kopf.dev', 'v1beta1', 'kopfexamples').preferred
    assert _find(resources, '', 'v1', 'pods').preferred


async def test_subresources_are_folded_into_their_parents(api: FakeApi, client: AiohttpClient) -> None:
    _serve_cluster(api)
    resources = await client.scan_resources()
    assert _find(resources, '', 'v1', 'pods').subresources == {'status', 'log'}
    assert _find(resources, '', 'v1', 'namespaces').subresources == frozenset()


async def test_cluster_scoped_resources_are_not_namespaced(api: FakeApi, client: AiohttpClient) -> None:
    _serve_cluster(api)
    resources = await client.scan_resources()
    assert _find(resources, '', 'v1', 'namespaces').namespaced is False


async def test_empty_singular_names_are_derived_from_the_kind(api: FakeApi, client: AiohttpClient) -> None:
    _serve_cluster(api)
    resources = await client.scan_resources()
    assert _find(resources, '', 'v1', 'namespaces').singular == 'namespace'


@pytest.mark.parametrize('status', [503, 500, 403])
async def test_failing_groups_are_skipped_at_once_with_a_warning(
        api: FakeApi, client: AiohttpClient, sleeps: List[float],
        caplog: pytest.LogCaptureFixture, status: int,
) -> None:
    _serve_cluster(api, metrics_status=status)
    resources = await client.scan_resources()
    assert {r.group for r in resources} == {'', 'kopf.dev'}
    assert sleeps == []  # no retries for a group that the API server says is down
    assert 'metrics.k8s.io/v1beta1 cannot be scanned' in caplog.text


async def test_vanished_groups_are_skipped_quietly(
        api: FakeApi, client: AiohttpClient, caplog: pytest.LogCaptureFixture,
) -> None:
    _serve_cluster(api, metrics_status=404)
    resources = await client.scan_resources()
    assert {r.group for r in resources} == {'', 'kopf.dev'}
    assert 'cannot be scanned' not in caplog.text


async def test_failing_core_api_fails_the_scan(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings,
) -> None:
    settings.networking.error_backoffs = []
    api.add('/api/v1', {'kind': 'Status', 'code': 503}, status=503)
    api.add('/apis', GROUPS)
    with pytest.raises(clients.APIServerError):
        await client.scan_resources()


@pytest.mark.parametrize('groups, expected_paths', [
    pytest.param([''], ['/api/v1'], id='core-only'),
    pytest.param(['kopf.dev'], ['/apis', '/apis/kopf.dev/v1', '/apis/kopf.dev/v1beta1'], id='one-group'),
    pytest.param(['', 'kopf.dev'], ['/api/v1', '/apis', '/apis/kopf.dev/v1', '/apis/kopf.dev/v1beta1'],
                 id='core-and-group'),
    pytest.param([], [], id='none'),
])
async def test_scanning_is_limited_to_the_given_groups(
        api: FakeApi, client: AiohttpClient, groups: Optional[List[str]], expected_paths: List[str],
) -> None:
    _serve_cluster(api)
    resources = await client.scan_resources(groups=groups)
    assert sorted(request.path for request in api.requests) == sorted(expected_paths)
    assert {r.group for r in resources} == set(groups or [])
