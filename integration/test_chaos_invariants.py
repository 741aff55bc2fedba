"""
The chaos soak's invariant checks, on journals made up here (no cluster is needed).

Each test takes the journals of a clean soak of one object and spoils them in one way.
"""
from typing import Any

from integration.chaos import _invariants, _schedule

PID, NEW_PID = 100, 200


def run(event: str, handler: str, ts: float, *, value: Any = None, pid: int = PID) -> dict[str, Any]:
    return {'event': event, 'obj': 'o1', 'handler': handler, 'ts': ts, 'value': value, 'pid': pid}


def clean_runs() -> list[dict[str, Any]]:
    return [
        run('daemon-start', 'keeper', 1.0),
        run('start', 'create/first', 1.0, value=0), run('success', 'create/first', 1.1, value=0),
        run('start', 'create/second', 1.2, value=0),
        run('temporary-failure', 'create/second', 1.3, value=0),
        run('start', 'create/second', 2.0, value=0), run('success', 'create/second', 2.1, value=0),
        run('start', 'update', 3.0, value=1), run('success', 'update', 3.1, value=1),
        run('start', 'delete', 4.0), run('success', 'delete', 4.1),
        run('daemon-exit', 'keeper', 4.2),
    ]


def actions() -> list[dict[str, Any]]:
    return [{'event': 'created', 'obj': 'o1', 'value': 0, 'ts': 0.5},
            {'event': 'updated', 'obj': 'o1', 'value': 1, 'ts': 2.5},
            {'event': 'deleted', 'obj': 'o1', 'ts': 3.5}]


def check(runs: list[dict[str, Any]], *, faults: list[dict[str, Any]] | None = None,
          leftovers: dict[str, list[str]] | None = None, memory: tuple[int, int] = (50 << 20, 55 << 20),
          ) -> _invariants.Report:
    return _invariants.check(_invariants.Evidence(
        runs=runs, actions=actions(), faults=faults or [], leftovers=leftovers or {},
        final_pid=PID, memory_warm=memory[0], memory_end=memory[1]))


def test_a_clean_soak_passes_with_its_figures() -> None:
    report = check(clean_runs())
    assert report.ok, report.problems()
    assert (report.objects, report.expected, report.handled) == (1, 4, 4)
    assert (report.handler_runs, report.temporary_failures) == (5, 1)
    assert report.line().startswith('PASSED: objects=1 handled=4/4 lost=0 runs=5 temporary-failures=1 ')


def test_a_missing_update_is_a_lost_change() -> None:
    runs = [r for r in clean_runs() if r['handler'] != 'update']
    report = check(runs)
    assert not report.ok
    assert report.lost == ['o1 update value=1']
    assert 'lost=1' in report.line()


def test_an_update_handled_with_another_value_does_not_count() -> None:
    runs = [dict(r, value=2) if r['handler'] == 'update' else r for r in clean_runs()]
    assert check(runs).lost == ['o1 update value=1']


def test_a_rerun_after_success_in_the_same_process_is_a_violation() -> None:
    runs = [*clean_runs(), run('start', 'create/first', 5.0, value=0)]
    report = check(runs)
    assert not report.ok
    assert len(report.reruns_after_success) == 1
    assert 'reruns-after-success=1' in report.line()


def test_a_rerun_after_the_process_was_killed_is_at_least_once() -> None:
    runs = [*clean_runs(), run('start', 'update', 5.0, value=1, pid=NEW_PID)]
    faults = [{'event': 'fault', 'fault': _schedule.KILL_OPERATOR, 'killed_pid': PID, 'ts': 4.5}]
    report = check(runs, faults=faults)
    assert report.ok, report.problems()
    assert report.reruns_after_kill == 1
    assert report.faults == {_schedule.KILL_OPERATOR: 1}


def test_a_rerun_in_another_process_that_was_not_killed_is_a_violation() -> None:
    runs = [*clean_runs(), run('start', 'update', 5.0, value=1, pid=NEW_PID)]
    assert len(check(runs).reruns_after_success) == 1


def test_a_rerun_after_a_failed_patch_of_that_object_is_at_least_once() -> None:
    runs = [*clean_runs(), run('start', 'update', 5.0, value=1)]
    faults = [{'event': 'patch-failed', 'path': '/apis/g/v1/namespaces/ns/soakobjects/o1', 'ts': 3.2}]
    report = check(runs, faults=faults)
    assert report.ok, report.problems()
    assert report.reruns_after_failed_store == 1


def test_a_failed_patch_of_another_object_excuses_nothing() -> None:
    runs = [*clean_runs(), run('start', 'update', 5.0, value=1)]
    faults = [{'event': 'patch-failed', 'path': '/apis/g/v1/namespaces/ns/soakobjects/o2/status', 'ts': 3.2}]
    assert len(check(runs, faults=faults).reruns_after_success) == 1


def test_a_rerun_across_an_api_server_restart_is_at_least_once() -> None:
    runs = [*clean_runs(), run('start', 'update', 9.0, value=1)]
    faults = [{'event': 'fault', 'fault': _schedule.RESTART_APISERVER, 'began': 3.5, 'ts': 8.0}]
    report = check(runs, faults=faults)
    assert report.ok, report.problems()
    assert report.reruns_after_failed_store == 1


def test_retries_before_the_success_are_not_reruns() -> None:
    report = check(clean_runs())
    assert (report.reruns_after_kill, report.reruns_after_failed_store, report.reruns_after_success) == (0, 0, [])


def test_an_object_left_after_deletion_is_reported_with_its_finalizers() -> None:
    report = check(clean_runs(), leftovers={'o1': ['kopf.zalando.org/KopfFinalizerMarker']})
    assert not report.ok
    assert report.leaked_objects == ["o1 finalizers=['kopf.zalando.org/KopfFinalizerMarker']"]


def test_a_daemon_still_running_for_a_deleted_object_is_reported() -> None:
    runs = [r for r in clean_runs() if r['event'] != 'daemon-exit']
    assert check(runs).leaked_daemons == ['o1']


def test_daemons_of_killed_processes_do_not_count() -> None:
    runs = [*clean_runs(), run('daemon-start', 'keeper', 0.5, pid=NEW_PID)]
    assert check(runs).leaked_daemons == []


def test_memory_beyond_the_bound_is_a_leak() -> None:
    warm = 50 << 20
    assert check(clean_runs(), memory=(warm, int(warm * 1.5) + (16 << 20))).ok
    report = check(clean_runs(), memory=(warm, int(warm * 1.5) + (17 << 20)))
    assert report.memory_leak and 'LEAK' in report.line()


def test_missed_watch_faults_are_not_counted_as_injected() -> None:
    faults: list[dict[str, Any]] = [
        {'event': 'fault', 'fault': _schedule.DROP_WATCH, 'path': None, 'missed': True, 'ts': 1.0},
        {'event': 'fault', 'fault': _schedule.DROP_WATCH, 'path': '/api/v1/x', 'ts': 2.0},
    ]
    assert check(clean_runs(), faults=faults).faults == {_schedule.DROP_WATCH: 1}


def test_operator_crashes_are_counted_and_shown() -> None:
    faults = [{'event': 'operator-exited', 'pid': PID, 'code': 1, 'ts': 2.0}]
    report = check(clean_runs(), faults=faults)
    assert report.crashes == 1
    assert 'operator-crashes=1' in report.line()
