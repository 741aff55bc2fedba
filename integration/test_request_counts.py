"""
The API requests of one object's lifecycle: create → handle → update → delete.

Inputs: an operator with a create, an update and a delete handler, for a CRD
with a status subresource and for one without; the object is created, patched
and deleted by the test through our own client (so that the test's own
requests are known exactly: one each). Outputs: the operator's requests by verb
and resource, from the API server's own counters (``apiserver_request_total``),
minus the test's; the k8s-events the operator posts are reported apart.
"""
import asyncio
import pathlib
import time

import pytest

import kopf
import kopf_client
from integration.controlplane import Cluster, RequestCounts, subtract_counts
from integration.kubeobjects import apply_crds
from integration.operating import OperatorProcess

LIFECYCLE = str(pathlib.Path(__file__).parent / 'operators_src' / 'lifecycle.py')


def crd(plural: str, *, status_subresource: bool) -> dict:  # type: ignore[type-arg]
    version = {'name': 'v1', 'served': True, 'storage': True,
               'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {
                   'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
                   'status': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}}
    if status_subresource:
        version['subresources'] = {'status': {}}
    kind = plural[:-1].capitalize()
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': f'{plural}.counting.kopf.dev'},
            'spec': {'group': 'counting.kopf.dev', 'scope': 'Namespaced', 'versions': [version],
                     'names': {'plural': plural, 'singular': plural[:-1], 'kind': kind}}}


def by_verb(counts: RequestCounts, plural: str) -> dict[str, int]:
    # Only what an operator does while it watches: the namespace controller's LISTs and DELETEs
    # (cleaning up the namespaces of other tests) fall outside and are not counted.
    result: dict[str, int] = {}
    for key, value in counts.items():
        if key.resource in (plural, 'events') and key.verb in ('GET', 'POST', 'PATCH', 'PUT') and value:
            name = f'{key.verb} {key.resource}' + (f'/{key.subresource}' if key.subresource else '')
            result[name] = result.get(name, 0) + value
    return dict(sorted(result.items()))


async def lifecycle(cluster: Cluster, namespace: str, plural: str, op: OperatorProcess) -> None:
    assert cluster.control_plane is not None
    info = kopf.ConnectionInfo(server=cluster.server, token=cluster.admin_token,
                               ca_path=str(cluster.control_plane.ca_path))
    client = kopf_client.driver.create_client(vault=kopf.Vault({'admin': info}), settings=kopf.OperatorSettings())
    resource = kopf.Resource('counting.kopf.dev', 'v1', plural, namespaced=True)
    try:
        await client.create_object(resource, namespace=namespace, body={
            'apiVersion': 'counting.kopf.dev/v1', 'kind': plural[:-1].capitalize(),
            'metadata': {'name': 'obj'}, 'spec': {'field': 'a'}})
        await asyncio.to_thread(op.wait_for, r"Creation is processed", timeout=30)
        await asyncio.sleep(1)  # the operator's own follow-up events settle
        await client.patch_object(resource, namespace=namespace, name='obj', patch={'spec': {'field': 'b'}})
        await asyncio.to_thread(op.wait_for, r"Updating is processed", timeout=30)
        await asyncio.sleep(1)
        await client.delete_object(resource, namespace=namespace, name='obj')
        await asyncio.to_thread(op.wait_for, r"Deleted, really deleted, and we are notified\.", timeout=30)
        await asyncio.sleep(1)
    finally:
        await client.close()


@pytest.mark.parametrize('status_subresource', [True, False], ids=['status-subresource', 'no-subresource'])
def test_requests_of_one_lifecycle(cluster: Cluster, namespace: str, tmp_path: pathlib.Path,
                                   status_subresource: bool) -> None:
    if cluster.control_plane is None:
        pytest.skip("Needs the local control plane's token for the exact accounting (other clusters: skip).")
    plural = 'withstatuses' if status_subresource else 'plainobjs'
    apply_crds(cluster, crd(plural, status_subresource=status_subresource))
    with OperatorProcess([LIFECYCLE, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log',
                         env={'TEST_PLURAL': plural}) as op:
        op.wait_for(r"Starting the watch-stream for")
        time.sleep(1)
        before = cluster.metrics()
        asyncio.run(lifecycle(cluster, namespace, plural, op))
        after = cluster.metrics()
    counts = by_verb(subtract_counts(after, before), plural)
    # The test's own requests: one of each.
    for own in [f'POST {plural}', f'PATCH {plural}']:  # the DELETE verb is not counted at all
        counts[own] -= 1
    counts = {key: value for key, value in counts.items() if value}
    operator_requests = sum(value for key, value in counts.items() if not key.endswith('events'))
    print(f"\nOne lifecycle, {'with' if status_subresource else 'without'} the status subresource: "
          f"{operator_requests} requests by the operator (events apart): {counts}")
    assert "Handler 'create_fn' succeeded." in op.log
    assert "Handler 'update_fn/spec.field' succeeded." in op.log
    assert "Handler 'delete_fn' succeeded." in op.log
    assert counts.get(f'PATCH {plural}', 0) >= 3  # finalizer, the results, the release: at least
