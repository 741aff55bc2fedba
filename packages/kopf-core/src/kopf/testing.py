"""
Testing tools for operators: ``from kopf.testing import KopfRunner``.

They live in the ``kopf-testing`` package; this module makes them importable
under the documented name, and says what to install when it is missing.
"""
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type for the users' type checkers; imported by name at run time
    from kopf_testing import KopfRunner as KopfRunner
else:
    try:
        _implementation: Any = importlib.import_module('kopf_testing')
    except ImportError as e:  # pragma: no cover - depends on what is installed
        raise ImportError("kopf.testing needs the 'kopf-testing' package: pip install kopf-testing") from e
    KopfRunner = _implementation.KopfRunner

__all__ = ['KopfRunner']
