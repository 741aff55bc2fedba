"""
A local Kubernetes control plane for tests, benchmarks and the demo, without Docker.

This is NOT a Kubernetes distribution: no kubelet, no scheduler, no networking.
It is etcd, kube-apiserver, kube-controller-manager and kubectl of one release,
run as processes on 127.0.0.1. The binaries are taken from the directory in
``$KOPF_CONTROLPLANE_BINARIES``, else from the cache, else from ``PATH``, else
built from source (see ``gomod/``) into the cache, with progress lines on
stderr (or where :func:`report_progress_to` sends them). From a shell::

    python -m kopf_testing.controlplane start --state-dir /tmp/cp   # prints `export KUBECONFIG=...`
    python -m kopf_testing.controlplane stop --state-dir /tmp/cp

From Python::

    with ControlPlane() as control_plane:
        counts = control_plane.read_request_counts()
"""
from ._builder import (
    BINARIES,
    BINARIES_ENV_VAR,
    BuildError,
    ensure_binaries,
    find_binaries,
    get_cache_dir,
    read_kubernetes_version,
)
from ._cluster import ControlPlane, ControlPlaneError
from ._commands import Ports
from ._credentials import ADMIN_USER, NON_ADMIN_USER
from ._gates import FeatureGates, FeatureGatesError, format_feature_gates, parse_feature_gates
from ._lookup import locate_binaries
from ._metrics import RequestCounts, RequestKey, parse_request_counts, subtract_counts, sum_counts
from ._progress import report_progress_to
from ._targets import (
    CLUSTER_ENV_VAR,
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
    'BINARIES',
    'BINARIES_ENV_VAR',
    'CLUSTER_ENV_VAR',
    'KINDS',
    'NON_ADMIN_USER',
    'BuildError',
    'Cluster',
    'ClusterUnavailable',
    'ControlPlane',
    'ControlPlaneError',
    'FeatureGates',
    'FeatureGatesError',
    'KubectlError',
    'Ports',
    'RequestCounts',
    'RequestKey',
    'choose_kind',
    'ensure_binaries',
    'find_binaries',
    'format_feature_gates',
    'get_cache_dir',
    'locate_binaries',
    'parse_feature_gates',
    'parse_request_counts',
    'read_kubernetes_version',
    'report_progress_to',
    'run_k3d_cluster',
    'run_local_cluster',
    'subtract_counts',
    'sum_counts',
    'use_existing_cluster',
]
