"""
Testing tools for kopf-based operators.

``KopfRunner`` runs an operator (the ``kopf`` command) in a background thread
while the test manipulates the cluster and asserts; the pytest plugin (enabled
automatically when this package is installed) offers fixtures around it.
Also importable as ``kopf.testing``.
"""
from kopf_testing._runner import KopfRunner

__all__ = ['KopfRunner']
