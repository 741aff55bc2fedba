"""
The command line, importable for in-process runs: ``kopf.cli.main``, ``kopf.cli.CLIControls``.

It lives in the ``kopf-cli`` package; this module makes it importable under the
documented name, and says what to install when it is missing.
"""
import importlib
from typing import Any

try:
    _implementation: Any = importlib.import_module('kopf_cli')
except ImportError as e:  # pragma: no cover - depends on what is installed
    raise ImportError("kopf.cli needs the 'kopf-cli' package: pip install kopf-cli") from e

main = _implementation.main
CLIControls = _implementation.CLIControls
LogFormatParamType = _implementation.LogFormatParamType

__all__ = ['CLIControls', 'LogFormatParamType', 'main']
