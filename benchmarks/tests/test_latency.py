"""The creation latency as the harness's object tracker sees it, and its percentiles."""
import pytest

from benchmarks.scenarios.burst import percentile
from benchmarks.tracker import ObjectState, ObjectTracker

PENDING = ObjectState(created=False, updated_field=None, deleting=False)
CREATED = ObjectState(created=True, updated_field=None, deleting=False)
UPDATED = ObjectState(created=True, updated_field='x', deleting=False)
FINALIZED = ObjectState(created=False, updated_field=None, deleting=False, finalized=True)
CREATED_FINALIZED = ObjectState(created=True, updated_field=None, deleting=False, finalized=True)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]
    monkeypatch.setattr('benchmarks.tracker.time.monotonic', lambda: now[0])
    return now


def tracker() -> ObjectTracker:
    return ObjectTracker(api=None, plural='benchmarkeds', namespace='ns')  # type: ignore[arg-type]


def test_latency_runs_from_the_appearance_to_the_first_result(clock: list[float]) -> None:
    objects = tracker()
    objects._store('a', PENDING)
    clock[0] = 100.5
    objects._store('a', PENDING)  # e.g. the finalizer added: not the result yet
    clock[0] = 101.25
    objects._store('a', CREATED)
    clock[0] = 103.0
    objects._store('a', UPDATED)  # later changes do not move the creation's end
    assert objects.creation_latencies(['a']) == [1.25]


def test_an_object_created_anew_is_timed_anew(clock: list[float]) -> None:
    objects = tracker()
    objects._store('a', CREATED)
    objects._forget('a')
    clock[0] = 110.0
    objects._store('a', PENDING)
    clock[0] = 110.5
    objects._store('a', CREATED)
    assert objects.creation_latencies(['a']) == [0.5]


def test_the_first_step_runs_from_the_appearance_to_the_first_finalizer(clock: list[float]) -> None:
    objects = tracker()
    objects._store('a', PENDING)
    clock[0] = 100.5
    objects._store('a', FINALIZED)
    clock[0] = 101.0
    objects._store('a', CREATED_FINALIZED)
    clock[0] = 102.0
    objects._store('a', PENDING)  # released (e.g. at deletion), then added again: not the first step
    clock[0] = 103.0
    objects._store('a', FINALIZED)
    assert objects.finalizer_latencies(['a']) == [0.5]
    assert objects.creation_latencies(['a']) == [1.0]


def test_objects_not_yet_handled_have_no_latency(clock: list[float]) -> None:
    objects = tracker()
    objects._store('a', PENDING)
    assert objects.creation_latencies(['a', 'unknown']) == []
    assert objects.finalizer_latencies(['a', 'unknown']) == []


@pytest.mark.parametrize('share, expected', [(50, 50.0), (99, 99.0), (100, 100.0), (1, 1.0), (0, 1.0)])
def test_nearest_rank_percentiles(share: float, expected: float) -> None:
    values = [float(value) for value in range(100, 0, -1)]
    assert percentile(values, share) == expected


def test_the_percentile_of_one_value_is_that_value() -> None:
    assert percentile([0.3], 99) == 0.3


def test_no_values_have_no_percentile() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
