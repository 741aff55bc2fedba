"""
Files and directories readable by their owner only: the control plane's state is all credentials.

Keys, kubeconfigs, the tokens file, ``state.json`` (it holds the tokens too) and
the servers' logs are written here with the modes 0600 (files) and 0700
(directories), whatever the umask and whatever was there before.

``path.touch(mode=0o600)`` followed by ``path.write_text(...)`` is not enough:
``touch`` applies the mode only when it creates the file, so a file left by an
earlier run (or by an earlier version of this code) with 0644 keeps 0644 and
gets the new secrets. Here, a file is written into a new temporary file made
with ``O_EXCL`` and mode 0600 (``tempfile.mkstemp``), then renamed over the old
one: readers never see half a file, and whoever had the old file open does not
get the new contents.
"""
import os
import pathlib
import stat
import tempfile

FILE_MODE = 0o600
DIR_MODE = 0o700

# Given to the servers' processes: what they write (etcd's data, the controller manager's
# self-signed serving certificate in --cert-dir, 0644 by default) is their owner's only.
PROCESS_UMASK = 0o077


def make_private_dir(path: pathlib.Path) -> None:
    """
    Create the directory (and its missing parents) if absent; make it 0700 either way.

    It must be a real directory of this user: the default state directory has a
    predictable name in the shared ``/tmp``, where another user may have put a
    directory or a symlink of theirs first, to read or swap what is written there.
    """
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f'{path} is not a directory owned by this user (a symlink, or made by another user); '
                              f'remove it or choose another one.')
    path.chmod(DIR_MODE)


def write_private_file(path: pathlib.Path, data: bytes | str) -> None:
    """Replace the file's contents atomically with a 0600 file, even if the old one was more open."""
    content = data.encode() if isinstance(data, str) else data
    fd, tmp_name = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)  # O_EXCL, 0600
    tmp_path = pathlib.Path(tmp_name)
    try:
        with os.fdopen(fd, 'wb') as f:
            os.fchmod(f.fileno(), FILE_MODE)  # the umask may have taken bits away (never added any)
            f.write(content)
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def open_private_log(path: pathlib.Path) -> int:
    """A descriptor for appending to the log, 0600 even if it existed (the logs are kept between runs)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd
