"""
The cluster for the integration tests: ``--kopf-cluster=local|existing|k3d``.

The fixtures come from kopf-testing's pytest plugin (``kopf_testing.pytest_plugin``):
``kopf_cluster`` (session-wide, see ``kopf_testing.controlplane.Cluster``; it also
sets ``$KUBECONFIG`` for subprocesses), ``kopf_namespace`` (a fresh one per test),
``kopf_crd``, ``kopf_kube``, ``kopf_operator`` and ``kopf_operator_process``. The
tests here use them by their short names, which are defined once below (and
imported by ``docs/tests/conftest.py``): the plugin keeps the short names free
for its users' own fixtures. A module's own fixture of the same name (e.g. a
module's ``operator``) overrides the short one there, as before. The local
control plane's logs stay in pytest's temporary directory (``controlplane0/logs/``).
"""
from collections.abc import Callable

import pytest

from integration.kubeobjects import apply_crds
from integration.operating import EXAMPLES
from kopf_testing import InProcessOperator, KubeClient, OperatorProcess
from kopf_testing.controlplane import Cluster


@pytest.fixture(scope='session')
def cluster(kopf_cluster: Cluster) -> Cluster:
    """``kopf_cluster`` by its short name: the session's real API server."""
    return kopf_cluster


@pytest.fixture
def namespace(kopf_namespace: str) -> str:
    """``kopf_namespace`` by its short name: the test's fresh namespace."""
    return kopf_namespace


@pytest.fixture
def kube(kopf_kube: KubeClient) -> KubeClient:
    """``kopf_kube`` by its short name: the objects of the test's namespace."""
    return kopf_kube


@pytest.fixture
def crd(kopf_crd: Callable[..., list[str]]) -> Callable[..., list[str]]:
    """``kopf_crd`` by its short name: CRDs applied and established."""
    return kopf_crd


@pytest.fixture
def operator(kopf_operator: Callable[..., InProcessOperator]) -> Callable[..., InProcessOperator]:
    """``kopf_operator`` by its short name: an operator in a thread, in the test's namespace."""
    return kopf_operator


@pytest.fixture
def operator_process(kopf_operator_process: Callable[..., OperatorProcess]) -> Callable[..., OperatorProcess]:
    """``kopf_operator_process`` by its short name: ``kopf run`` as a subprocess, in the test's namespace."""
    return kopf_operator_process


@pytest.fixture(scope='session')
def example_crd(kopf_cluster: Cluster) -> None:
    """The examples' CRD (``kopfexamples.kopf.dev``), established; for ``usefixtures`` in the modules that need it."""
    apply_crds(kopf_cluster, EXAMPLES / 'crd.yaml')
