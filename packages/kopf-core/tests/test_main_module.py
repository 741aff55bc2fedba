"""
``python -m kopf`` in an environment with only the core installed (as in this package's tests).

It must not fail with a traceback, but name the package to install, and exit with an error.
"""
import importlib.util
import subprocess
import sys


def test_python_m_kopf_names_the_missing_package() -> None:
    assert importlib.util.find_spec('kopf_cli') is None, "This test needs an environment without kopf-cli."
    result = subprocess.run([sys.executable, '-m', 'kopf', 'run', 'handlers.py'],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stdout == ''
    assert result.stderr == "Error: the kopf command line is not installed: pip install kopf-cli\n"
