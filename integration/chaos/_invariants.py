"""
What a soak must show at its end, counted from the journals alone.

- Handled: every object's create (all its sub-handlers), each distinct value
  its spec was updated to, and its deletion have a successful run.
- Not re-run after success: once a handler has succeeded for an object (and a
  value), a later start of it is legitimate only if that success might not
  have been stored: the operator process was killed (kill -9) after it, or a
  PATCH of that object failed, or the API server or etcd restarted, between
  the success and the re-run. Those are Kopf's at-least-once re-runs and are
  counted apart; any other re-run is a violation.
- Nothing left: no object remains (with our finalizer or at all) after its
  deletion, and the last operator runs no daemon of a deleted object.
- No leak: the operator's memory at the end stays within a bound of its memory
  after warm-up.
"""
import collections
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from ._records import Record
from ._schedule import DROP_REQUEST, KILL_OPERATOR, RESTART_APISERVER, RESTART_ETCD, SERVER_ERROR, THROTTLE

CREATE_HANDLERS = ('create/first', 'create/second')
MEMORY_GROWTH_FACTOR = 1.5      # the end's RSS may be up to this times the warmed-up RSS ...
MEMORY_GROWTH_SLACK = 16 << 20  # ... plus this much (allocator arenas, caches filled once)


@dataclasses.dataclass
class Evidence:
    runs: Sequence[Record]          # the operator's journal: handler starts/successes, daemons, timers
    actions: Sequence[Record]       # the workload's journal: created, updated (value), deleted
    faults: Sequence[Record]        # injected faults, kills (with the killed pid), failed PATCHes (with the path)
    leftovers: Mapping[str, Sequence[str]]  # objects existing at the end → their finalizers
    final_pid: int | None           # the operator running at the end, before it is stopped
    memory_warm: int | None         # bytes of RSS after warm-up, and at the end
    memory_end: int | None


@dataclasses.dataclass
class Report:
    objects: int = 0
    expected: int = 0               # handlings expected: creates + distinct updates + deletes
    handled: int = 0
    lost: list[str] = dataclasses.field(default_factory=list)
    handler_runs: int = 0
    temporary_failures: int = 0
    reruns_after_kill: int = 0
    reruns_after_failed_store: int = 0
    reruns_after_success: list[str] = dataclasses.field(default_factory=list)
    leaked_objects: list[str] = dataclasses.field(default_factory=list)
    leaked_daemons: list[str] = dataclasses.field(default_factory=list)
    faults: dict[str, int] = dataclasses.field(default_factory=dict)
    crashes: int = 0                # the operator exited on its own (restarted by the harness; not an invariant)
    memory_warm: int | None = None
    memory_end: int | None = None
    memory_leak: bool = False

    @property
    def ok(self) -> bool:
        return not (self.lost or self.reruns_after_success or self.leaked_objects or self.leaked_daemons
                    or self.memory_leak)

    def line(self) -> str:
        faults = ','.join(f'{kind}={count}' for kind, count in sorted(self.faults.items())) or 'none'
        memory = f'{_mib(self.memory_warm)}->{_mib(self.memory_end)}MiB'
        return (f"{'PASSED' if self.ok else 'FAILED'}: objects={self.objects} handled={self.handled}/{self.expected}"
                f" lost={len(self.lost)} runs={self.handler_runs} temporary-failures={self.temporary_failures}"
                f" reruns-after-kill={self.reruns_after_kill}"
                f" reruns-after-failed-store={self.reruns_after_failed_store}"
                f" reruns-after-success={len(self.reruns_after_success)}"
                f" leaked-objects={len(self.leaked_objects)} leaked-daemons={len(self.leaked_daemons)}"
                f" memory={memory}{' LEAK' if self.memory_leak else ''} operator-crashes={self.crashes}"
                f" faults: {faults}")

    def problems(self) -> list[str]:
        """The violations, one per line, for the failure message."""
        return ([f'lost: {item}' for item in self.lost]
                + [f're-run after success: {item}' for item in self.reruns_after_success]
                + [f'left after deletion: {item}' for item in self.leaked_objects]
                + [f'daemon of a deleted object: {item}' for item in self.leaked_daemons]
                + ([f'memory grew from {self.memory_warm} to {self.memory_end} bytes'] if self.memory_leak else []))


def check(evidence: Evidence) -> Report:
    report = Report()
    _check_handled(evidence, report)
    _check_reruns(evidence, report)
    _check_leftovers(evidence, report)
    report.faults = dict(collections.Counter(
        str(record['fault']) for record in evidence.faults if record.get('event') == 'fault'
        and not record.get('missed')))
    report.crashes = sum(record.get('event') == 'operator-exited' for record in evidence.faults)
    report.memory_warm, report.memory_end = evidence.memory_warm, evidence.memory_end
    if evidence.memory_warm is not None and evidence.memory_end is not None:
        bound = evidence.memory_warm * MEMORY_GROWTH_FACTOR + MEMORY_GROWTH_SLACK
        report.memory_leak = evidence.memory_end > bound
    return report


def _expected_handlings(actions: Iterable[Record]) -> list[tuple[str, str, object]]:
    expected: list[tuple[str, str, object]] = []
    for action in actions:
        name = str(action['obj'])
        if action['event'] == 'created':
            expected.extend((name, handler, action['value']) for handler in CREATE_HANDLERS)
        elif action['event'] == 'updated':
            expected.append((name, 'update', action['value']))
        elif action['event'] == 'deleted':
            expected.append((name, 'delete', None))
    return expected


def _check_handled(evidence: Evidence, report: Report) -> None:
    succeeded = {_key(run) for run in evidence.runs if run['event'] == 'success'}
    report.objects = len({str(action['obj']) for action in evidence.actions if action['event'] == 'created'})
    expected = _expected_handlings(evidence.actions)
    report.expected = len(expected)
    for name, handler, value in expected:
        if (name, handler, value if handler == 'update' else None) in succeeded:
            report.handled += 1
        else:
            report.lost.append(f"{name} {handler}" + (f" value={value}" if handler == 'update' else ''))


def _key(run: Record) -> tuple[str, str, object]:
    """What a handler is responsible for: updates per value, all others once per object."""
    return str(run['obj']), str(run['handler']), run.get('value') if run['handler'] == 'update' else None


def _check_reruns(evidence: Evidence, report: Report) -> None:
    killed = {record['killed_pid'] for record in evidence.faults if record.get('fault') == KILL_OPERATOR}
    unstored = _unstored_windows(evidence.faults)
    first_success: dict[tuple[str, str, object], Record] = {}
    for run in sorted(evidence.runs, key=lambda r: float(r['ts'])):
        event = run['event']
        report.handler_runs += event == 'start'
        report.temporary_failures += event == 'temporary-failure'
        key = _key(run)
        if event == 'success':
            first_success.setdefault(key, run)
        elif event == 'start' and key in first_success:
            success = first_success[key]
            since, until = float(success['ts']), float(run['ts'])
            windows = unstored.get(key[0], []) + unstored.get('', [])
            if success['pid'] != run['pid'] and success['pid'] in killed:
                report.reruns_after_kill += 1
            elif any(began <= until and ended >= since for began, ended in windows):
                report.reruns_after_failed_store += 1
            else:
                report.reruns_after_success.append(
                    f"{key[0]} {key[1]} (succeeded in pid {success['pid']} at {since:.3f},"
                    f" started again in pid {run['pid']} at {until:.3f})")


def _unstored_windows(faults: Iterable[Record]) -> dict[str, list[tuple[float, float]]]:
    """
    When the operator's writes could have been lost, by object name ('' for all objects).

    A PATCH of an object failed (answered with an error, or cut off), or the API server or etcd restarted.
    """
    windows: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for record in faults:
        ts = float(record['ts'])
        if record.get('fault') in (RESTART_APISERVER, RESTART_ETCD):
            windows[''].append((float(record.get('began', ts)), ts))
        elif record.get('event') == 'patch-failed' or (
                record.get('fault') in (DROP_REQUEST, THROTTLE, SERVER_ERROR) and record.get('method') == 'PATCH'):
            windows[_object_name(str(record['path']))].append((ts, ts))
    return windows


def _object_name(path: str) -> str:
    """The object's name in a path like ``/apis/group/v1/namespaces/ns/plural/name[/status]``."""
    parts = path.strip('/').split('/')
    return parts[-2] if parts[-1] == 'status' else parts[-1]


def _check_leftovers(evidence: Evidence, report: Report) -> None:
    deleted = {str(action['obj']) for action in evidence.actions if action['event'] == 'deleted'}
    report.leaked_objects = [f"{name} finalizers={list(finalizers)}"
                             for name, finalizers in sorted(evidence.leftovers.items()) if name in deleted]
    running: collections.Counter[str] = collections.Counter()
    for run in evidence.runs:
        if run['pid'] == evidence.final_pid and run['event'] in ('daemon-start', 'daemon-exit'):
            running[str(run['obj'])] += 1 if run['event'] == 'daemon-start' else -1
    report.leaked_daemons = sorted(name for name, count in running.items() if count > 0 and name in deleted)


def _mib(value: int | None) -> str:
    return '?' if value is None else f'{value / (1 << 20):.1f}'
