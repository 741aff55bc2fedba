"""
The short fixture names of the repository's own tests (``cluster``, ``namespace``), from their one definition;
and the documentation site, built once for the tests that read its pages.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

from integration.conftest import cluster, namespace

__all__ = ['built_site', 'cluster', 'namespace']

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='session')
def built_site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """
    The site as ``hatch run docs:check`` builds it (strictly), in a temporary directory.

    It is built in the docs environment, which has MkDocs and mkdocstrings (the tests'
    environment has not), with the project's own hatch if it is not on the PATH.
    """
    hatch = shutil.which('hatch') or str(REPO / '.tools' / 'bin' / 'hatch')
    site = tmp_path_factory.mktemp('site')
    result = subprocess.run([hatch, 'run', 'docs:check'], cwd=REPO, env={**os.environ, 'DOCS_SITE_DIR': str(site)},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"The site's build failed:\n{result.stdout}\n{result.stderr}"
    return site
