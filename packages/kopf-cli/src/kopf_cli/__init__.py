"""
The ``kopf`` command line: ``kopf run``, ``kopf freeze``, ``kopf resume``.

Also importable as ``kopf.cli`` for running the commands in-process
(e.g. ``kopf.testing.KopfRunner`` passes :class:`CLIControls` as click's ``obj``).
"""
from kopf_cli._controls import CLIControls
from kopf_cli._options import LogFormatParamType
from kopf_cli.main import main

__all__ = [
    'CLIControls',
    'LogFormatParamType',
    'main',
]
