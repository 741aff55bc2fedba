"""
What the integration tests do to the cluster as a user would: CRDs, objects, polling.

Thin shorthands over kopf-testing's :class:`~kopf_testing.Kube` (all via
``kubectl`` of the ``cluster`` fixture), kept for the tests' brevity.
"""
import json
import pathlib
from collections.abc import Callable
from typing import Any

from integration.controlplane import Cluster
from kopf_testing import Kube, apply_crds, crd_manifest, poll

FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'
DIFFBASE = 'kopf.zalando.org/last-handled-configuration'
FINISHED = r"Handling cycle is finished, waiting for new changes\."

Object = dict[str, Any]

__all__ = [
    'DIFFBASE',
    'FINALIZER',
    'FINISHED',
    'Object',
    'apply_crds',
    'crd_manifest',
    'create_object',
    'get_object',
    'merge_patch',
    'object_log_lines',
    'poll',
    'wait_for_object',
]


def apply_peering_crds(cluster: Cluster, examples: pathlib.Path) -> None:
    """The example resource's and the peering CRDs of the examples directory, served."""
    apply_crds(cluster, examples / 'crd.yaml', examples / 'peering.yaml')


def create_peering(cluster: Cluster, namespace: str, name: str) -> str:
    Kube(cluster, namespace).kubectl('apply', '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfPeering', 'metadata': {'name': name}}))
    return name


def create_object(cluster: Cluster, namespace: str, manifest: Object) -> None:
    Kube(cluster, namespace).create(manifest)


def get_object(cluster: Cluster, namespace: str, resource: str, name: str) -> Object:
    """The object as stored; ``resource`` as kubectl takes it (e.g. ``plural.group``)."""
    return Kube(cluster, namespace).get(resource, name)


def merge_patch(cluster: Cluster, namespace: str, resource: str, name: str, patch: Object) -> None:
    Kube(cluster, namespace).patch(resource, name, patch)


def object_log_lines(log: str, namespace: str, name: str) -> list[str]:
    """The log lines about one object, without the timestamp, level and ``[namespace/name]`` prefix."""
    prefix = f"[{namespace}/{name}] "
    return [line.split(prefix, 1)[1] for line in log.splitlines() if prefix in line]


def wait_for_object(cluster: Cluster, namespace: str, resource: str, name: str,
                    predicate: Callable[[Object], bool], *, timeout: float = 20) -> Object:
    """Poll the object until it satisfies the predicate (the operators' patches are asynchronous)."""
    return Kube(cluster, namespace).wait_for(resource, name, predicate, timeout=timeout)
