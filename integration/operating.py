"""
Running operators as users run them: ``kopf run ...`` in a separate process.

The implementation is kopf-testing's (:class:`kopf_testing.OperatorProcess`);
here, operators run from the repository's root, where the tests' paths point.
"""
import pathlib
from collections.abc import Sequence
from typing import Optional

from kopf_testing import OperatorProcess as _OperatorProcess
from kopf_testing import kopf_executable
from kopf_testing._polling import DEFAULT_TIMEOUT, patient

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / 'examples'

# The waits' timeout and its stretching by $KOPF_TESTING_PATIENCE, for the tests' own waits on processes.
__all__ = ['DEFAULT_TIMEOUT', 'EXAMPLES', 'REPO_ROOT', 'OperatorProcess', 'kopf_executable', 'patient']


class OperatorProcess(_OperatorProcess):
    """A ``kopf run`` subprocess with its log captured to a file, run in the repository's root."""

    def __init__(self, args: Sequence[str], *, log_path: pathlib.Path, env: Optional[dict[str, str]] = None):
        super().__init__(args, log_path=log_path, env=env, cwd=REPO_ROOT)
