"""
``python -m kopf`` in an environment without kopf-cli (the core alone, as a vendoring tool has it).

It must not fail with a traceback, but name the package to install, and exit with an error.
The absence is simulated (``None`` in ``sys.modules`` makes the import fail as a missing
package does), so that the test means the same in every environment, also where kopf-cli is installed.
"""
import subprocess
import sys

WITHOUT_CLI = ("import runpy, sys; sys.modules['kopf_cli'] = None; "
               "runpy.run_module('kopf', run_name='__main__', alter_sys=True)")


def test_python_m_kopf_names_the_missing_package() -> None:
    result = subprocess.run([sys.executable, '-c', WITHOUT_CLI, 'run', 'handlers.py'],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stdout == ''
    assert result.stderr == "Error: the kopf command line is not installed: pip install kopf-cli\n"
