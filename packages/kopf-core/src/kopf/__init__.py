"""
Kubernetes Operator Pythonic Framework (Kopf).

The public API is what this module exports; everything under ``kopf._cogs``
and ``kopf._core`` is internal and can change at any time.
"""
from kopf import clients, on
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError
from kopf._cogs.structs.references import EVERYTHING, Resource

__all__ = [
    'EVERYTHING',
    'ConnectionInfo',
    'LoginError',
    'OperatorSettings',
    'Resource',
    'clients',
    'on',
]
