"""
Local control planes with feature gates, as the integration tests ask for them.

One place says what a gate that the pinned Kubernetes release does not know
means for a test: skipped (the servers refuse it at their start), and nothing
else — any other failure to start fails the test.
"""
from collections.abc import Callable, Mapping

import pytest

from integration.controlplane import Cluster, ControlPlaneError

GatedClusters = Callable[[dict[str, bool]], Cluster]


def cluster_with_gates(kopf_gated_cluster: GatedClusters, gates: Mapping[str, bool]) -> Cluster:
    """The local cluster with these gates (the session's if it has them already), or the test skipped."""
    try:
        return kopf_gated_cluster(dict(gates))
    except ControlPlaneError as e:
        if 'unrecognized feature gate' not in str(e):
            raise
        pytest.skip(f"The pinned Kubernetes release lacks the {', '.join(gates)} gate (1.36+ has "
                    f"ShardedListAndWatch; see controlplane/gomod/go.mod).")
