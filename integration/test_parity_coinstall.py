"""
Our kopf-core installed beside Kopf's own ``kopf`` distribution: what a user sees, and the way out.

Both distributions install the import package ``kopf``; installed into one
environment, their files are mixed in one ``kopf/`` folder and pip says nothing.
Importing ``kopf`` then warns in one line and says what to run; running it
leaves a working environment. Without it, uninstalling ``kopf`` later breaks
ours: it removes the files that both distributions list (``kopf/__init__.py``).

A fresh virtual environment per module: our kopf-core is built into a wheel
from the working tree, and Kopf 1.45.2 comes from the package index.
"""
import os
import pathlib
import shutil
import subprocess
import sys
from typing import List

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
UPSTREAM = 'kopf==1.45.2'
WARNING_START = "RuntimeWarning: kopf-core and Kopf's own 'kopf' 1.45.2 are both installed in "
FIX = 'pip uninstall -y kopf kopf-core && pip install kopf-core'

# What an installer prints when it cannot reach the package index at all (then, and only then, skip).
_OFFLINE_SIGNS = ('Failed to fetch', 'dns error', 'Connection refused', 'Network is unreachable',
                  'Temporary failure in name resolution', 'NewConnectionError')


def find_uv() -> str:
    uv = ROOT / '.tools' / 'bin' / 'uv'
    found = str(uv) if uv.exists() else shutil.which('uv')
    if found is None:
        pytest.fail("uv is needed to build the wheel: run `source scripts/_bootstrap.sh` first.")
    return found


def run(args: List[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, cwd='/')
    if check and result.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def install_from_index(uv: str, python: pathlib.Path, requirement: str) -> None:
    result = run([uv, 'pip', 'install', '--python', str(python), requirement], check=False)
    if result.returncode != 0:
        if any(sign in result.stderr for sign in _OFFLINE_SIGNS):
            pytest.skip(f"The package index is unreachable, {requirement} cannot be installed: {result.stderr}")
        pytest.fail(f"Cannot install {requirement}:\n{result.stderr}")


@pytest.fixture(scope='module')
def wheel(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out_dir = tmp_path_factory.mktemp('wheels')
    run([find_uv(), 'build', '--wheel', '--out-dir', str(out_dir), str(ROOT / 'packages' / 'kopf-core')])
    [built] = out_dir.glob('kopf_core-*.whl')
    return built


@pytest.fixture()
def python(tmp_path: pathlib.Path) -> pathlib.Path:
    """A fresh virtual environment with pip (the installer whose silence is the problem)."""
    venv = tmp_path / 'venv'
    base = getattr(sys, '_base_executable', None) or sys.executable
    run([base, '-m', 'venv', str(venv)])
    return venv / 'bin' / 'python'


def import_kopf(python: pathlib.Path, code: str = "import kopf; print(kopf.on.create)",
                ) -> subprocess.CompletedProcess[str]:
    return run([str(python), '-c', code], check=False)


def pip(python: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([str(python), '-m', 'pip', '--disable-pip-version-check', *args])


def test_ours_installed_over_kopf_warns_and_the_advice_works(python: pathlib.Path, wheel: pathlib.Path) -> None:
    install_from_index(find_uv(), python, UPSTREAM)
    installed = pip(python, 'install', str(wheel))
    assert 'kopf' not in installed.stderr.lower()  # pip itself says nothing about the overlap

    result = import_kopf(python)
    assert result.returncode == 0, result.stderr  # it works, but not for long: see the next test
    warnings = [line for line in result.stderr.splitlines() if 'RuntimeWarning' in line]
    assert len(warnings) == 1, result.stderr
    assert WARNING_START in warnings[0]
    assert FIX in warnings[0]

    # The advice, as a user would follow it: then, a clean environment with only ours.
    pip(python, 'uninstall', '-y', 'kopf', 'kopf-core')
    pip(python, 'install', str(wheel))
    result = import_kopf(python, "import kopf; print(kopf.__version__, kopf.on.create.__module__)")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ''
    assert result.stdout.split() == [wheel.name.split('-')[1], 'kopf.on']


def test_uninstalling_kopf_afterwards_breaks_ours(python: pathlib.Path, wheel: pathlib.Path) -> None:
    # Why the warning exists: the failure comes later, far from its cause, and names neither package.
    install_from_index(find_uv(), python, UPSTREAM)
    pip(python, 'install', str(wheel))
    pip(python, 'uninstall', '-y', 'kopf')
    result = import_kopf(python)
    assert result.returncode != 0
    assert "has no attribute 'on'" in result.stderr

    pip(python, 'install', '--force-reinstall', str(wheel))  # the way back, as the migration guide says
    assert import_kopf(python).returncode == 0


def test_ours_alone_imports_silently(python: pathlib.Path, wheel: pathlib.Path) -> None:
    pip(python, 'install', str(wheel))
    result = import_kopf(python, "import warnings; warnings.simplefilter('error'); import kopf; print(kopf.on)")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ''
