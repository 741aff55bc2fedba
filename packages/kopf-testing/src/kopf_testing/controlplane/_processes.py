"""
Server processes that are started, watched and stopped as whole process groups.

Each server runs in its own session (hence its own process group), for two
reasons: a Ctrl-C in the terminal reaches only the foreground group, so the
servers are not killed behind the back of the orderly shutdown; and a process
started by ``python -m kopf_testing.controlplane start`` outlives the command.

A process is either spawned here (and reaped via its ``Popen``) or adopted by
its PID from a state file written by another Python process; then it is not our
child, so its exit is seen by polling. Output goes to a log file, not to pipes:
nobody reads the pipes of a background server, and a full pipe would block it.
The logs are readable by their owner only (0600, even if they existed before), and
so is whatever the servers write themselves: they run with the umask 077.
"""
import os
import pathlib
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

from . import _files

_POLL_INTERVAL = 0.05


class Process:
    """One server process; stopping it signals its whole process group."""

    def __init__(
            self,
            name: str,
            pid: int,
            log_path: pathlib.Path,
            popen: subprocess.Popen[bytes] | None = None,
    ) -> None:
        self.name = name
        self.pid = pid
        self.log_path = log_path
        self._popen = popen
        self._gone = False

    def __repr__(self) -> str:
        return f'<Process {self.name} pid={self.pid}>'

    @classmethod
    def spawn(
            cls,
            name: str,
            argv: Sequence[str],
            *,
            log_path: pathlib.Path,
            env: Mapping[str, str] | None = None,
    ) -> 'Process':
        _files.make_private_dir(log_path.parent)
        with open(_files.open_private_log(log_path), 'ab') as log:
            log.write(f'\n$ {" ".join(argv)}\n'.encode())
            log.flush()
            popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None, start_new_session=True,
                umask=_files.PROCESS_UMASK,
            )
        return cls(name, popen.pid, log_path, popen)

    @classmethod
    def adopt(cls, name: str, pid: int, *, log_path: pathlib.Path, executable: pathlib.Path) -> 'Process':
        """
        A process started by another (maybe finished) Python process, known by its PID.

        If the PID now belongs to another program (the server died and the PID
        was reused, e.g. after a reboot), the process is adopted as already gone,
        so that stopping it never signals a stranger.
        """
        process = cls(name, pid, log_path)
        process._gone = _runs_other_program(pid, executable)
        return process

    @property
    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen is not None else None

    def is_running(self) -> bool:
        if self._gone:
            return False
        if self._popen is not None:
            return self._popen.poll() is None
        return _is_alive(self.pid)

    def stop(self, *, timeout: float = 10.0) -> None:
        """SIGTERM the group, wait, then SIGKILL the group; return when all of it is gone."""
        if self._gone:
            return
        self._signal_group(signal.SIGTERM)
        if not self._wait_group(timeout):
            self._signal_group(signal.SIGKILL)
            self._wait_group(timeout)

    def read_log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors='replace')
        except FileNotFoundError:
            return ''
        return ''.join(text.splitlines(keepends=True)[-lines:])

    def _signal_group(self, signum: signal.Signals) -> None:
        # The group id equals the PID of its leader (start_new_session=True).
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            pass

    def _wait_group(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if self._popen is not None:
                self._popen.poll()  # reap the leader, or it stays a zombie in the group
            if not _is_group_alive(self.pid):
                if self._popen is not None:
                    self._popen.wait(timeout)  # it may have died just after the poll: reap it now
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_INTERVAL)


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process reused the PID
        return False
    return not _is_zombie(pid)


def _is_group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # A group of one zombie leader (an adopted process whose parent has not reaped it yet) is gone for us.
    return _is_alive(pgid) or _has_other_members(pgid)


def _has_other_members(pgid: int) -> bool:
    proc = pathlib.Path('/proc')
    if not proc.is_dir():
        return True  # cannot tell without procfs: assume the worst and keep waiting
    for entry in proc.iterdir():
        if entry.name.isdigit() and int(entry.name) != pgid:
            fields = _read_stat_fields(int(entry.name))
            if fields is not None and fields[2] != 'Z' and int(fields[4]) == pgid:
                return True
    return False


def _runs_other_program(pid: int, executable: pathlib.Path) -> bool:
    try:
        argv0 = pathlib.Path(f'/proc/{pid}/cmdline').read_bytes().split(b'\0')[0]
    except OSError:
        return False  # gone (nothing to fear) or no procfs (cannot tell: trust the state file)
    return argv0 != os.fsencode(executable)


def _is_zombie(pid: int) -> bool:
    fields = _read_stat_fields(pid)
    return fields is not None and fields[2] == 'Z'


def _read_stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat: [pid, comm, state, ppid, pgrp, ...], or None if unavailable."""
    try:
        text = pathlib.Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces; split around the last ')'.
    head, _, tail = text.rpartition(')')
    pid_str, _, comm = head.partition(' (')
    return [pid_str, comm, *tail.split()]
