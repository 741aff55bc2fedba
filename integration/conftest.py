"""
The cluster for the integration tests: ``--kopf-cluster=local|existing|k3d``.

The fixtures come from kopf-testing's pytest plugin (``kopf_testing.pytest_plugin``):
``cluster`` (session-wide, see ``kopf_testing.controlplane.Cluster``; it also
sets ``$KUBECONFIG`` for subprocesses), ``namespace`` (a fresh one per test),
``crd``, ``kube``, ``operator`` and ``operator_process``. The local control
plane's logs stay in pytest's temporary directory (``controlplane0/logs/``).
"""
import pytest

from integration.kubeobjects import apply_crds
from integration.operating import EXAMPLES
from kopf_testing.controlplane import Cluster


@pytest.fixture(scope='session')
def example_crd(cluster: Cluster) -> None:
    """The examples' CRD (``kopfexamples.kopf.dev``), established; for ``usefixtures`` in the modules that need it."""
    apply_crds(cluster, EXAMPLES / 'crd.yaml')
