"""
Pinning: the control plane on some CPUs, the operator under test on others (``taskset``, util-linux).

Unpinned, the API server and etcd take CPU time from the same cores as the operator:
a side that loads the API server more slows itself down through it, and at high rates
the capacity measured is the machine's, not the operator's. Pinned, each gets cores of
its own (on 2 cores: the operator on CPU 0, the control plane on CPU 1), so that the
operator's CPU is the limit that the rate sweep finds. The harness (the creators and
the watch) stays unpinned: it runs wherever the scheduler puts it.

The operator is started under ``taskset -c CPUS``, which then runs it in its own
process (the PID that the harness measures). The control plane is started first, then
pinned with ``taskset -a -p -c CPUS PID`` for all the threads of each of its
processes; their later threads inherit it, and Go (1.25 and newer) adjusts its
GOMAXPROCS to the CPUs it is allowed.
"""
import dataclasses
import os
import pathlib
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT = '0:1'  # OPERATOR:CONTROL_PLANE on a 2-core machine
_CPU_LIST = re.compile(r'^\d+(-\d+)?(,\d+(-\d+)?)*$')


class PinningError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Pinning:
    operator: str  # taskset's CPU list, e.g. "0" or "0-1"
    control_plane: str


def parse(text: str, *, available: Sequence[int] | None = None) -> Pinning:
    """``OPERATOR:CONTROL_PLANE`` (e.g. ``0:1``): two CPU lists of this machine that do not overlap."""
    operator, separator, control_plane = text.partition(':')
    if not separator or not _CPU_LIST.match(operator) or not _CPU_LIST.match(control_plane):
        raise PinningError(f'--pin {text!r}: expected OPERATOR:CONTROL_PLANE CPU lists, e.g. {DEFAULT} or 0-1:2-3.')
    cpus = set(available if available is not None else sorted(os.sched_getaffinity(0)))
    for what, listed in (('operator', operator), ('control plane', control_plane)):
        missing = expand(listed) - cpus
        if missing:
            raise PinningError(f'--pin {text!r}: the {what} CPUs {sorted(missing)} are not available here '
                               f'(available: {sorted(cpus)}).')
    if expand(operator) & expand(control_plane):
        raise PinningError(f'--pin {text!r}: the operator and the control plane share CPUs; give them separate ones.')
    return Pinning(operator=operator, control_plane=control_plane)


def expand(cpu_list: str) -> set[int]:
    """taskset's CPU list as a set: ``0,2-3`` is {0, 2, 3}."""
    cpus: set[int] = set()
    for part in cpu_list.split(','):
        first, _, last = part.partition('-')
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def taskset() -> str:
    found = shutil.which('taskset')
    if found is None:
        raise PinningError('--pin needs taskset (util-linux), which is not found on PATH.')
    return found


def prefix(cpus: str | None) -> list[str]:
    """The command prefix that runs a process on those CPUs; none when unpinned."""
    return [] if cpus is None else [taskset(), '-c', cpus]


def pin_processes(pids: Mapping[str, int], cpus: str) -> dict[str, str]:
    """Pin every thread of the running processes to the CPUs; what the kernel then allows each of them."""
    for pid in pids.values():
        subprocess.run([taskset(), '-a', '-p', '-c', cpus, str(pid)], check=True, capture_output=True)
    return {name: allowed_cpus(pid) for name, pid in pids.items()}


def allowed_cpus(pid: int) -> str:
    """The CPUs a process may run on, as the kernel says (``Cpus_allowed_list``)."""
    try:
        status = pathlib.Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return 'unknown'
    match = re.search(r'^Cpus_allowed_list:\s*(\S+)', status, re.MULTILINE)
    return match.group(1) if match else 'unknown'


def describe(results: Mapping[str, Any]) -> str:
    """The results header's line on pinning."""
    pinned = results.get('pinning')
    if not pinned:
        return 'Pinning: none (the operator, the control plane and the harness share all CPUs).'
    processes = ', '.join(f'{name} {cpus}' for name, cpus in sorted(pinned.get('control_plane_allowed', {}).items()))
    return (f"Pinning (taskset): the operator under test on CPU {pinned['operator']}, the control plane on CPU "
            f"{pinned['control_plane']} (allowed as read back: {processes or 'not read'}); the harness unpinned.")
