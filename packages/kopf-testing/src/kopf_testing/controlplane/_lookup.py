"""
Where the control-plane binaries come from, in the order a user expects.

1. ``$KOPF_CONTROLPLANE_BINARIES``: a directory with all of them (e.g. of
   another Kubernetes version, or from a distribution). If it is set, it is
   used or it is an error: never silently passed over.
2. The build cache of the pinned version (see :mod:`._builder`).
3. ``PATH``: if one directory there has all of them.
4. Otherwise, they are built from their Go modules into the cache.
"""
import os
import pathlib
import shutil

from ._builder import BINARIES, BINARIES_ENV_VAR, BuildError, ensure_binaries, find_binaries


def locate_binaries() -> pathlib.Path:
    """The directory with all the binaries; built if found nowhere (which takes minutes)."""
    return find_existing_binaries() or ensure_binaries()


def find_existing_binaries() -> pathlib.Path | None:
    """The directory with all the binaries if there is one already, else ``None`` (never builds)."""
    return _from_env() or find_binaries() or _from_path()


def _from_env() -> pathlib.Path | None:
    value = os.environ.get(BINARIES_ENV_VAR)
    if not value:
        return None
    bin_dir = pathlib.Path(value).expanduser()
    missing = [name for name in BINARIES if not os.access(bin_dir / name, os.X_OK)]
    if missing:
        raise BuildError(f'${BINARIES_ENV_VAR} is {value!r}, but it has no executable {", ".join(missing)}. '
                         f'Point it to a directory with all of {", ".join(BINARIES)}, '
                         f'or unset it to use the cache, PATH, or a build from Go modules.')
    return bin_dir


def _from_path() -> pathlib.Path | None:
    found = [shutil.which(name) for name in BINARIES]
    dirs = {pathlib.Path(path).parent for path in found if path is not None}
    if None in found or len(dirs) != 1:
        return None  # partially or scattered: not one consistent release, so not used
    return dirs.pop()
