"""
An in-memory Kubernetes API for fast tests of operators: no cluster, milliseconds per test.

It implements kopf-core's client protocol (:mod:`kopf.clients`) as kube-apiserver
behaves, which one conformance suite checks against both this and kopf-client
on a real API server: resourceVersions and conflicts, watches with bookmarks
and 410 Gone, merge and JSON patches (with ``test``), finalizers and
``deletionTimestamp``, the status subresource, ``generation``, label and field
selectors, pagination with ``continue``, namespaced and cluster-scoped resources.
What it cannot do the same way (schema keywords beyond types and pruning,
several versions per CRD, admission, RBAC, deleting namespaces or CRDs,
strategic merge patches) it refuses with :class:`UnsupportedByMemoryApi`.

Use it with the pytest plugin's ``--kopf-cluster=memory``, or directly::

    api = MemoryApi()
    await kopf.operator(client=MemoryDriver(api), namespaces=['default'])
"""
from kopf_testing.memory._client import MemoryClient, MemoryDriver
from kopf_testing.memory._errors import UnsupportedByMemoryApi
from kopf_testing.memory._kube import MemoryKube
from kopf_testing.memory._store import MemoryApi

__all__ = ['MemoryApi', 'MemoryClient', 'MemoryDriver', 'MemoryKube', 'UnsupportedByMemoryApi']
