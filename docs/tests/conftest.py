"""The short fixture names of the repository's own tests (``cluster``, ``namespace``), from their one definition."""
from integration.conftest import cluster, namespace

__all__ = ['cluster', 'namespace']
