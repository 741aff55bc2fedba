"""
The local control plane, as the integration tests import it: kopf-testing's.

The tool itself lives in :mod:`kopf_testing.controlplane` (``python -m
kopf_testing.controlplane``); this module only keeps the tests' imports short
and stable (``from integration.controlplane import Cluster``).
"""
from kopf_testing.controlplane import *  # noqa: F403
from kopf_testing.controlplane import __all__  # noqa: F401
