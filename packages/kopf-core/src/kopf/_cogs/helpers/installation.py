"""
Facts of the installation: the version, and a mix-up with Kopf's own ``kopf`` distribution.

Both ``kopf-core`` and Kopf's own ``kopf`` distribution install the import
package ``kopf``. Installed side by side into one folder, they overwrite each
other's files without a word from pip, and uninstalling either one later
removes files that the other one needs. Python's packaging has no way to
prevent it, so the import says what to do instead: once, and cheaply (a
directory listing; the metadata is read only if both distributions are there).
"""
from __future__ import annotations

import os
import warnings
from typing import Optional

DISTRIBUTION = 'kopf-core'
UNKNOWN_VERSION = '0+unknown'  # e.g. the package is vendored (copied) into a tool: no metadata

_OURS_PREFIX = 'kopf_core-'  # the wheel's normalized name in the .dist-info folder
_THEIRS_PREFIX = 'kopf-'  # not kopf_client-, kopf_cli-, etc.: those normalize to underscores
_SHARED_FILE = 'kopf/__init__.py'


def get_version() -> str:
    """The version of the installed ``kopf-core``; a placeholder if it is not installed (vendored)."""
    import importlib.metadata  # only when asked: it is not cheap to import
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


def find_coinstalled_kopf(site_dir: str) -> Optional[str]:
    """The version of Kopf's ``kopf`` distribution if it shares the ``kopf`` folder in site_dir with us."""
    try:
        names = os.listdir(site_dir)
    except OSError:
        return None
    ours = [name for name in names if name.startswith(_OURS_PREFIX) and name.endswith('.dist-info')]
    theirs = [name for name in names if name.startswith(_THEIRS_PREFIX) and name.endswith('.dist-info')]
    if not ours or not theirs:
        return None
    return _read_shared_version(site_dir, theirs)


def _read_shared_version(site_dir: str, dist_info_names: list[str]) -> Optional[str]:
    import importlib.metadata
    import pathlib
    for name in dist_info_names:
        dist = importlib.metadata.Distribution.at(pathlib.Path(site_dir) / name)
        if dist.metadata['Name'] is not None and dist.metadata['Name'].lower() == 'kopf':
            if any(str(file) == _SHARED_FILE for file in dist.files or []):
                return dist.version
    return None


def warn_if_coinstalled(package_file: str) -> None:
    """Warn in one line if Kopf's ``kopf`` distribution is installed into the same folder as we are."""
    site_dir = os.path.dirname(os.path.dirname(os.path.abspath(package_file)))
    version = find_coinstalled_kopf(site_dir)
    if version is not None:
        warnings.warn(coinstallation_message(version, site_dir), RuntimeWarning, stacklevel=3)


def coinstallation_message(version: str, site_dir: str) -> str:
    return (f"kopf-core and Kopf's own 'kopf' {version} are both installed in {site_dir}, "
            f"mixing their files in one 'kopf' folder; uninstall both and reinstall one of them: "
            f"pip uninstall -y kopf kopf-core && pip install kopf-core "
            f"(see 'Installed beside Kopf' in the migration guide).")
