"""
Testing tools for kopf-based operators.

- :mod:`kopf_testing.controlplane`: a real, local Kubernetes control plane
  (``python -m kopf_testing.controlplane start``), no Docker needed.
- The pytest plugin (enabled automatically when this package is installed):
  ``kopf_cluster``, ``kopf_namespace``, ``kopf_crd``, ``kopf_kube``,
  ``kopf_operator`` and more fixtures, see :mod:`kopf_testing.pytest_plugin`.
- ``KopfRunner`` runs an operator (the ``kopf`` command) in a background thread
  while the test manipulates the cluster and asserts. Also importable as ``kopf.testing``.
- ``OperatorProcess`` runs ``kopf run`` as a subprocess, as users run it.
"""
from kopf_testing._inprocess import InProcessOperator
from kopf_testing._polling import poll
from kopf_testing._process import OperatorProcess, kopf_executable
from kopf_testing._runner import KopfRunner
from kopf_testing.kube import Kube, KubeClient, apply_crds, crd_manifest

__all__ = [
    'InProcessOperator',
    'KopfRunner',
    'Kube',
    'KubeClient',
    'OperatorProcess',
    'apply_crds',
    'crd_manifest',
    'kopf_executable',
    'poll',
]
