"""
A local Kubernetes control plane for tests, benchmarks and the demo, without Docker.

This is NOT a Kubernetes distribution: no kubelet, no scheduler, no networking.
It is etcd, kube-apiserver, kube-controller-manager and kubectl of one release,
built from source (see ``gomod/``) into a cache outside the repository and run
as processes on 127.0.0.1. From a shell (at the repository root)::

    python -m integration.controlplane start --state-dir /tmp/cp   # prints `export KUBECONFIG=...`
    python -m integration.controlplane stop --state-dir /tmp/cp

From Python::

    with ControlPlane() as control_plane:
        counts = control_plane.read_request_counts()
"""
from ._builder import BuildError, ensure_binaries, find_binaries, get_cache_dir, read_kubernetes_version
from ._cluster import ADMIN_USER, NON_ADMIN_USER, ControlPlane, ControlPlaneError
from ._commands import Ports
from ._metrics import RequestCounts, RequestKey, parse_request_counts, subtract_counts, sum_counts
from ._targets import (
    KINDS,
    Cluster,
    ClusterUnavailable,
    KubectlError,
    choose_kind,
    run_k3d_cluster,
    run_local_cluster,
    use_existing_cluster,
)

__all__ = [
    'ADMIN_USER',
    'KINDS',
    'NON_ADMIN_USER',
    'BuildError',
    'Cluster',
    'ClusterUnavailable',
    'ControlPlane',
    'ControlPlaneError',
    'KubectlError',
    'Ports',
    'RequestCounts',
    'RequestKey',
    'choose_kind',
    'ensure_binaries',
    'find_binaries',
    'get_cache_dir',
    'parse_request_counts',
    'read_kubernetes_version',
    'run_k3d_cluster',
    'run_local_cluster',
    'subtract_counts',
    'sum_counts',
    'use_existing_cluster',
]
