"""
The rate sweep's results: the latency per rate and side, each side's capacity, its targets, its table.

A side's **capacity** is the highest rate of the sweep at which the p99 latency
(from each object's due time to its create handler's result) stays under 1 s:
at that rate and at every lower one. It is exact when the next rate of the sweep
was measured over 1 s with the creator on schedule; otherwise the sweep proves
only a bound: "≥ 80" (no rate was too fast for the side, or the next one is not
measured) or "< 5" (not even the lowest rate was under 1 s).

The targets compare the measured capacities when both are exact, and otherwise
only what the bounds prove; what they do not prove is "not measured".
"""
import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SCENARIO = 'rates'
THRESHOLD_MS = 1000.0
SIDES = ('ours', 'upstream', 'bare')
Results = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class RatePoint:
    """One rate for one side: the medians over the repeats that completed, and what qualifies them."""
    rate: float
    p50_ms: float | None  # None: no repeat completed
    p99_ms: float | None
    lower_bound: bool  # in some repeat, objects had no result in time: the p99 is at least this
    creator_behind: bool  # in some repeat, the creator fell behind its schedule
    failed: int  # the repeats that failed

    @property
    def under_threshold(self) -> bool:
        return self.p99_ms is not None and self.p99_ms < THRESHOLD_MS and not self.lower_bound

    @property
    def over_threshold(self) -> bool:
        """Too slow for the side, and not because of the creator: the side's capacity is below this rate."""
        return self.p99_ms is not None and not self.under_threshold and not self.creator_behind


@dataclasses.dataclass(frozen=True)
class Capacity:
    value: float  # the highest rate under the threshold, with every lower rate too; 0: none
    first_over: float | None  # the next rate, measured over the threshold; None: not found in the sweep
    lowest: float  # the sweep's lowest rate

    @property
    def exact(self) -> bool:
        return self.first_over is not None and self.value > 0

    @property
    def upper(self) -> float:
        """The true capacity is below this (at the sweep's resolution)."""
        return math.inf if self.first_over is None else self.first_over

    def describe(self) -> str:
        if self.exact:
            return f'{self.value:g}'
        if self.first_over is not None:
            return f'< {self.first_over:g}'
        return f'≥ {self.value:g}' if self.value else 'not measured'


def records(results: Results, variant: str, side: str, rate: float) -> list[Mapping[str, Any]]:
    return [record for record in results.get('runs', [])
            if (record['scenario'], record['variant'], record['side']) == (SCENARIO, variant, side)
            and record.get('rate') == rate]


def rate_point(results: Results, variant: str, side: str, rate: float) -> RatePoint | None:
    found = records(results, variant, side, rate)
    if not found:
        return None
    figures = [record['figures'] for record in found if record.get('ok')]
    return RatePoint(
        rate=rate,
        p50_ms=_median(figure['latency_p50_ms'] for figure in figures),
        p99_ms=_median(figure['latency_p99_ms'] for figure in figures),
        lower_bound=any(figure['latency_p99_lower_bound'] for figure in figures),
        creator_behind=any(figure['creator_behind'] for figure in figures),
        failed=len(found) - len(figures),
    )


def capacity_of(points: Sequence[RatePoint]) -> Capacity | None:
    """The capacity by the rule above; None if the side did not run the sweep."""
    if not points:
        return None
    ordered = sorted(points, key=lambda point: point.rate)
    value = 0.0
    for point in ordered:
        if not point.under_threshold:
            return Capacity(value, point.rate if point.over_threshold else None, ordered[0].rate)
        value = point.rate
    return Capacity(value, None, ordered[0].rate)


def side_capacity(results: Results, variant: str, side: str) -> Capacity | None:
    points = [rate_point(results, variant, side, rate) for rate in sweep_rates(results)]
    return capacity_of([point for point in points if point is not None])


def at_least(ours: Capacity | None, other: Capacity | None, share: float) -> bool | None:
    """Whether ours ≥ share times other's: by the measured values if both are exact, else by what the bounds prove."""
    if ours is None or other is None:
        return None
    if ours.exact and other.exact:
        return ours.value >= share * other.value
    if ours.value >= share * other.upper:
        return True
    if ours.upper <= share * other.value:
        return False
    return None


def sweep_rates(results: Results) -> list[float]:
    return sorted(float(rate) for rate in results.get('options', {}).get('rates') or ())


def verdicts(results: Results, variant: str) -> list[tuple[str, str, float | None, float | None, float | None,
                                                           bool | None]]:
    """The targets of the sweep: (key, description, ours, upstream, bound, met); none if it did not run."""
    if not sweep_rates(results):
        return []
    ours, upstream, bound = (side_capacity(results, variant, side) for side in SIDES)

    def value(capacity: Capacity | None) -> float | None:
        return None if capacity is None else capacity.value

    return [
        ('rates-capacity-upstream', "rate sweep: capacity (the highest rate with p99 < 1 s) ≥ 2 times upstream's",
         value(ours), value(upstream), value(bound), at_least(ours, upstream, 2.0)),
        ('rates-capacity-bound', "rate sweep: capacity (the highest rate with p99 < 1 s) ≥ 0.8 times the bound's",
         value(ours), value(upstream), value(bound), at_least(ours, bound, 0.8)),
    ]


def _median(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None
