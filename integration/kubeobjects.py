"""
What the integration tests do to the cluster as a user would: CRDs, objects, polling.

Everything goes through ``kubectl`` of the ``cluster`` fixture, so the tests see
the objects exactly as the API server stores them. The operators' changes are
asynchronous, hence :func:`poll` with a deadline instead of fixed sleeps.
"""
import json
import time
from collections.abc import Callable, Iterable
from typing import Any, Optional, TypeVar

from integration.controlplane import Cluster

FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'
DIFFBASE = 'kopf.zalando.org/last-handled-configuration'
FINISHED = r"Handling cycle is finished, waiting for new changes\."

Object = dict[str, Any]
T = TypeVar('T')


def crd_manifest(
        group: str,
        plural: str,
        kind: str,
        *,
        status_subresource: bool = True,
        preserved_status: bool = True,
        short_names: Iterable[str] = (),
        categories: Iterable[str] = (),
) -> Object:
    """
    A namespaced CRD with one version ``v1``, whose spec keeps any fields.

    ``preserved_status=False`` declares a status with no fields at all: the API
    server then prunes whatever is written there (what an operator must notice).
    """
    status: Object = {'type': 'object'}
    if preserved_status:
        status['x-kubernetes-preserve-unknown-fields'] = True
    version: Object = {
        'name': 'v1', 'served': True, 'storage': True,
        'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {
            'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
            'status': status,
        }}},
    }
    if status_subresource:
        version['subresources'] = {'status': {}}
    names: Object = {'plural': plural, 'singular': kind.lower(), 'kind': kind}
    if short_names:
        names['shortNames'] = list(short_names)
    if categories:
        names['categories'] = list(categories)
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{plural}.{group}'},
        'spec': {'group': group, 'scope': 'Namespaced', 'names': names, 'versions': [version]},
    }


def apply_crds(cluster: Cluster, *manifests: Object) -> None:
    """Apply the CRDs and wait until the API server serves them all."""
    for manifest in manifests:
        cluster.kubectl('apply', '-f', '-', input=json.dumps(manifest))
    for manifest in manifests:
        cluster.kubectl('wait', '--for=condition=established', '--timeout=60s',
                        f"crd/{manifest['metadata']['name']}")


def create_object(cluster: Cluster, namespace: str, manifest: Object) -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps(manifest))


def get_object(cluster: Cluster, namespace: str, resource: str, name: str) -> Object:
    """The object as stored; ``resource`` as kubectl takes it (e.g. ``plural.group``)."""
    output = cluster.kubectl('get', '-n', namespace, resource, name, '-o', 'json').stdout
    return json.loads(output)  # type: ignore[no-any-return]


def merge_patch(cluster: Cluster, namespace: str, resource: str, name: str, patch: Object) -> None:
    cluster.kubectl('patch', '-n', namespace, resource, name, '--type=merge', '-p', json.dumps(patch))


def poll(fn: Callable[[], Optional[T]], *, timeout: float = 20, interval: float = 0.2) -> T:
    """
    Call the function until it returns something truthy, and return that.

    Fails with the function's docstring (what was awaited) and its last result.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"Not reached in {timeout}s: {fn.__doc__ or fn!r}; the last result: {result!r}")
        time.sleep(interval)


def object_log_lines(log: str, namespace: str, name: str) -> list[str]:
    """The log lines about one object, without the timestamp, level and ``[namespace/name]`` prefix."""
    prefix = f"[{namespace}/{name}] "
    return [line.split(prefix, 1)[1] for line in log.splitlines() if prefix in line]


def wait_for_object(cluster: Cluster, namespace: str, resource: str, name: str,
                    predicate: Callable[[Object], bool], *, timeout: float = 20) -> Object:
    """Poll the object until it satisfies the predicate (the operators' patches are asynchronous)."""
    deadline = time.monotonic() + timeout
    while True:
        obj = get_object(cluster, namespace, resource, name)
        if predicate(obj):
            return obj
        if time.monotonic() > deadline:
            raise AssertionError(f"The object did not reach the expected state in {timeout}s:\n{json.dumps(obj)}")
        time.sleep(0.2)
