"""
The two implementations of kopf-core's client protocol that the conformance suite compares.

- ``kopf-client``: the aiohttp client on the real API server (the session's cluster).
- ``memory``: kopf-testing's in-memory API.

Each test gets a :class:`ApiEnv`: a client, a fresh namespace, and the test
CRDs' resources as the implementation's own discovery reports them.
"""
import dataclasses
import secrets
from collections.abc import AsyncIterator
from typing import Any, Optional

from integration.controlplane import Cluster
from kopf import clients
from kopf_testing import apply_crds, crd_manifest
from kopf_testing.memory import MemoryApi, MemoryClient, MemoryKube

GROUP = 'conformance.kopf.dev'
# Names of their own: CRDs are cluster-wide, and other tests resolve resources by plural, kind, short name.
CRDS = [
    crd_manifest(GROUP, 'conformers', 'Conformer', short_names=['cfm']),
    crd_manifest(GROUP, 'plainconformers', 'PlainConformer', status_subresource=False),
    crd_manifest(GROUP, 'clusterconformers', 'ClusterConformer', scope='Cluster'),
]
NAMESPACES = clients.Resource(group='', version='v1', plural='namespaces', kind='Namespace', namespaced=False)


@dataclasses.dataclass
class ApiEnv:
    client: clients.ApiClient
    namespace: str
    widgets: clients.Resource  # namespaced, with the status subresource
    plain: clients.Resource  # namespaced, without subresources
    cluster_widgets: clients.Resource  # cluster-scoped
    namespaces: list[str] = dataclasses.field(default_factory=list)  # made here, to be deleted afterwards

    def widget(self, name: str, *, kind: str = 'Conformer', **fields: Any) -> dict[str, Any]:
        return {'apiVersion': f'{GROUP}/v1', 'kind': kind, 'metadata': {'name': name}, **fields}

    async def new_namespace(self) -> str:
        name = f'conf-{secrets.token_hex(4)}'
        await self.client.create_object(NAMESPACES, namespace=None, body={
            'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}})
        self.namespaces.append(name)
        return name


async def memory_env() -> AsyncIterator[ApiEnv]:
    api = MemoryApi()
    MemoryKube(api).apply_crd(*CRDS)
    client = MemoryClient(api)
    yield await _make_env(client)


async def kopf_client_env(cluster: Cluster) -> AsyncIterator[ApiEnv]:
    import kopf
    import kopf_client
    apply_crds(cluster, *CRDS)
    info = kopf_client.login_with_kubeconfig()
    assert info is not None
    client = kopf_client.driver.create_client(vault=clients.Vault({'kubeconfig': info}),
                                              settings=kopf.OperatorSettings())
    try:
        env = await _make_env(client)
        yield env
        for name in env.namespaces:
            await client.delete_object(NAMESPACES, namespace=None, name=name)
        for name in await _cluster_widget_names(env):
            await client.delete_object(env.cluster_widgets, namespace=None, name=name)
    finally:
        await client.close()


async def _cluster_widget_names(env: ApiEnv) -> list[str]:
    """The cluster-scoped test objects outlive the test's namespace: they are deleted explicitly."""
    page = await env.client.list_objects(env.cluster_widgets, namespace=None)
    return [item['metadata']['name'] for item in page.items if env.namespace in item['metadata']['name']]


async def _make_env(client: clients.ApiClient) -> ApiEnv:
    resources = {resource.plural: resource for resource in await client.scan_resources(groups={GROUP})}
    env = ApiEnv(client, '', resources['conformers'], resources['plainconformers'], resources['clusterconformers'])
    env.namespace = await env.new_namespace()
    return env


def find(items: Any, name: str) -> Optional[dict[str, Any]]:
    return next((item for item in items if item['metadata']['name'] == name), None)
