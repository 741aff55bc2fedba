"""
Tests of the framework and its satellites against a real Kubernetes API server.

The API server comes from ``kopf_testing.controlplane`` (a local etcd,
kube-apiserver and kube-controller-manager built from source), from an existing
cluster named by ``$KUBECONFIG``, or from a throwaway k3d cluster: see
the pytest plugin of kopf-testing for the ``--kopf-cluster`` option.
"""
