"""
Tests of the framework and its satellites against a real Kubernetes API server.

The API server comes from ``integration.controlplane`` (a local etcd,
kube-apiserver and kube-controller-manager built from source), from an existing
cluster named by ``$KUBECONFIG``, or from a throwaway k3d cluster: see
``conftest.py`` for the ``--cluster`` option.
"""
