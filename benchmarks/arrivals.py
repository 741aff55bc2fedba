"""
Open-loop arrivals: objects created at a steady rate, on a schedule fixed in advance.

A burst measures the creator as much as the operator: the harness sends its
requests as fast as the API server answers them, so a side that loads the API
server more gets its objects later, and waits less for them. Users do not wait
for the operator before they create the next object. Here, the i-th object is
due ``i / rate`` seconds after the start, the same schedule for every side, and
each creation request is sent at its due time by a task of its own, with no limit
on the requests in flight: a slow answer delays no other creation.

The creator cannot always keep to the schedule (the machine is shared, and the
harness's event loop also parses the watch events). So every request's
lateness, from its due time to the moment it is actually sent, is recorded;
a step whose creator fell behind is reported as such, never hidden. The latency
runs from the due time, so any lateness of the creator is inside it, not
subtracted from it.
"""
import asyncio
import dataclasses
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from benchmarks.scenarios.burst import percentile

# The creator is behind when its p99 lateness is more than a tenth of the latency threshold.
LATENESS_TOLERANCE_S = 0.1
# The first object is due this long after the schedule is started, so that it is not late already.
LEAD_S = 0.05


class ScheduleError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Objects due at a steady rate for a duration: the i-th at ``i / rate`` seconds after the start."""
    rate: float  # objects per second
    duration: float  # seconds

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ScheduleError(f'The rate must be a positive number of objects per second, not {self.rate!r}.')
        if not (self.duration > 0 and math.isfinite(self.duration)):
            raise ScheduleError(f'The duration must be a positive number of seconds, not {self.duration!r}.')
        if self.count < 1:
            raise ScheduleError(f'{self.rate:g}/s for {self.duration:g} s is less than one object: '
                                f'raise the rate or the duration.')

    @property
    def count(self) -> int:
        return math.floor(self.rate * self.duration + 1e-9)  # 1e-9: 0.1 * 30 must be 3, not 2.999…

    @property
    def offsets(self) -> list[float]:
        return [index / self.rate for index in range(self.count)]


@dataclasses.dataclass
class Arrival:
    """One object's creation as the creator saw it, on the harness's monotonic clock."""
    index: int
    due: float
    sent: float | None = None
    answered: float | None = None
    error: str | None = None

    @property
    def lateness(self) -> float | None:
        return None if self.sent is None else max(0.0, self.sent - self.due)


async def create_on_schedule(create: Callable[[int], Awaitable[object]], schedule: Schedule, *,
                             answer_timeout: float) -> list[Arrival]:
    """
    Send ``create(index)`` for every object at its due time, never waiting for an answer before the next.

    Returns when every request is answered (or failed); those not answered ``answer_timeout``
    seconds after the last due time are cancelled and recorded as errors.
    """
    start = time.monotonic() + LEAD_S
    arrivals = [Arrival(index, start + offset) for index, offset in enumerate(schedule.offsets)]
    tasks: list[asyncio.Task[None]] = []
    try:
        for arrival in arrivals:
            delay = arrival.due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(_send(create, arrival)))
        await asyncio.wait(tasks, timeout=answer_timeout)
    finally:
        for task in tasks:
            task.cancel()  # only the unanswered ones are still running
        await asyncio.gather(*tasks, return_exceptions=True)
    for arrival in arrivals:
        if arrival.answered is None and arrival.error is None:
            arrival.error = f'no answer within {answer_timeout:g} s'
    return arrivals


async def _send(create: Callable[[int], Awaitable[object]], arrival: Arrival) -> None:
    arrival.sent = time.monotonic()
    try:
        await create(arrival.index)
    except Exception as e:  # recorded, not raised: one refused creation must not stop the schedule
        arrival.error = f'{type(e).__name__}: {e}'
    else:
        arrival.answered = time.monotonic()


def censored_percentile(values: Sequence[tuple[float, bool]], share: float) -> tuple[float, bool]:
    """
    The nearest-rank percentile of values some of which are only lower bounds (``True``: censored).

    Returns the value and whether it is itself only a lower bound: it is one when a censored value
    is at or below the rank, because that value's true one may be above the rank and shift it.
    """
    if not values:
        raise ValueError('No values to take a percentile of.')
    ordered = sorted(values)
    rank = max(0, math.ceil(share / 100 * len(ordered)) - 1)
    return ordered[rank][0], any(censored for _, censored in ordered[:rank + 1])


def summarize(arrivals: Sequence[Arrival], *, names: Sequence[str], appeared: Mapping[str, float],
              handled: Mapping[str, float], finalized: Mapping[str, float], ended: float) -> dict[str, Any]:
    """
    The figures of one rate step: latencies from each object's due time to its create handler's result.

    ``names`` are the objects' names by index; ``appeared``, ``finalized`` and ``handled`` are the times
    when the harness's watch first saw each object, its finalizer (the operator's first step), and its
    handler's result. An object with no result by ``ended`` (or whose creation failed) counts with
    ``ended - due``: a lower bound of its latency.
    """
    latencies: list[tuple[float, bool]] = []
    for arrival in arrivals:
        name = names[arrival.index]
        if arrival.error is None and name in handled:
            latencies.append((handled[name] - arrival.due, False))
        else:
            latencies.append((ended - arrival.due, True))
    p50, p50_censored = censored_percentile(latencies, 50)
    p99, p99_censored = censored_percentile(latencies, 99)
    from_watch = _intervals(appeared, handled, names)
    first_step = _intervals(appeared, finalized, names)
    answers = [a.answered - a.sent for a in arrivals if a.answered is not None and a.sent is not None]
    lateness = [a.lateness for a in arrivals if a.lateness is not None]
    lateness_p99 = percentile(lateness, 99) if lateness else None
    return {
        'objects': len(arrivals),
        'create_errors': sum(a.error is not None for a in arrivals),
        'unhandled': sum(censored for _, censored in latencies),
        'latency_p50_ms': p50 * 1000,
        'latency_p50_lower_bound': p50_censored,
        'latency_p99_ms': p99 * 1000,
        'latency_p99_lower_bound': p99_censored,
        'watch_latency_p50_ms': percentile(from_watch, 50) * 1000 if from_watch else None,
        'watch_latency_p99_ms': percentile(from_watch, 99) * 1000 if from_watch else None,
        'finalizer_latency_p50_ms': percentile(first_step, 50) * 1000 if first_step else None,
        'finalizer_latency_p99_ms': percentile(first_step, 99) * 1000 if first_step else None,
        'answer_p99_ms': percentile(answers, 99) * 1000 if answers else None,
        'lateness_p99_ms': None if lateness_p99 is None else lateness_p99 * 1000,
        'lateness_max_ms': max(lateness) * 1000 if lateness else None,
        # Nothing sent at all is the creator's failure too, not the operator's.
        'creator_behind': lateness_p99 is None or lateness_p99 > LATENESS_TOLERANCE_S,
    }


def _intervals(starts: Mapping[str, float], ends: Mapping[str, float], names: Sequence[str]) -> list[float]:
    return [ends[name] - starts[name] for name in names if name in ends and name in starts]
