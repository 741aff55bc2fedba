"""
Counting and timing with the standard library only: counters, gauges, histograms.

The framework records its figures here (see :mod:`instruments` for which);
an exposition library turns a :meth:`Registry.snapshot` into its own format
when it is scraped (``kopf-client[metrics]`` does it with ``prometheus_client``).
Nothing is formatted or sent here, so the cost on the hot path is a dict
lookup and an addition, and nothing at all is paid for the exposition until
someone asks for it.

The values are keyed by tuples of label values, in the order of the metric's
label names. Recording happens in the event loop only (the synchronous
handlers' threads do not record: their callers do, once they are back in the
loop), so no locks are needed. A snapshot may be taken from another thread
(e.g. by an exposition server of its own): it copies the dicts, which is atomic
for the dicts of tuples and numbers here, and retries if a gauge's source
happened to change while being read.

Gauges are either set (``inc``/``dec``/``set``) or read from sources at
snapshot time: a source is a function that says the current value (e.g. the
size of a watch-stream's known objects), so that the figures that change with
every event cost nothing until they are read.

Every series costs memory for good and bytes at every scrape, so a metric keeps
at most :data:`MAX_SERIES` of them: the label values beyond that are counted
together in one series whose labels are all :data:`OVERFLOW`, with a warning
once per metric. The framework's label values are few (the handlers' ids as
declared in the code, the resources, the verbs and codes); the limit is there
for what is not expected, e.g. ids made at run time from objects' contents.
"""
from __future__ import annotations

import bisect
import dataclasses
import logging
import math
import weakref
from typing import Callable, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, TypeVar

Labels = Tuple[str, ...]
Kind = Literal['counter', 'gauge', 'histogram']
Source = Callable[[], float]
OwnerT = TypeVar('OwnerT')

logger = logging.getLogger('kopf.metrics')

# The seconds of Prometheus' own default buckets, and longer ones: handlers and API calls may take minutes.
DEFAULT_BUCKETS: Tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

MAX_SERIES = 1000  # per metric: far more than an operator's handlers x resources x outcomes
OVERFLOW = '(other)'  # the label values of the series beyond the limit: no handler id or resource looks like it

_SNAPSHOT_ATTEMPTS = 5  # a source read from another thread may see its dict change meanwhile


@dataclasses.dataclass(frozen=True)
class Sample:
    """One value of one metric: its labels, and the value (or, for histograms, the buckets, the sum, the count)."""
    labels: Labels
    value: float = 0.0
    buckets: Tuple[Tuple[float, float], ...] = ()  # (upper bound, cumulative count), the last one is +Inf
    sum: float = 0.0


@dataclasses.dataclass(frozen=True)
class Family:
    """One metric as seen at one moment: what it is, and all its samples."""
    name: str
    kind: Kind
    help: str
    label_names: Labels
    samples: Tuple[Sample, ...]


class Metric:
    """What all metrics have: a name, a description, the names of the labels."""
    kind: Kind

    def __init__(self, name: str, help: str, label_names: Sequence[str] = (), *,
                 max_series: int = MAX_SERIES) -> None:
        self.name = name
        self.help = help
        self.label_names: Labels = tuple(label_names)
        self.max_series = max_series
        self._overflow: Labels = (OVERFLOW,) * len(self.label_names)
        self._warned = False

    def _overflowed(self, labels: Labels) -> Labels:
        """The labels to record under when the metric has all its series and these are new ones."""
        if not self._warned:
            self._warned = True
            logger.warning(f"The metric {self.name} has reached its limit of {self.max_series} series: "
                           f"new label values (the first one: {labels!r}) are counted together as {OVERFLOW!r}. "
                           f"If it is not expected, something makes label values without bound.")
        return self._overflow

    def collect(self) -> Family:
        return Family(name=self.name, kind=self.kind, help=self.help, label_names=self.label_names,
                      samples=tuple(self._samples()))

    def _samples(self) -> Iterator[Sample]:
        raise NotImplementedError


class Counter(Metric):
    """A value that only grows (e.g. the handlers' runs): a dict increment per event."""
    kind: Kind = 'counter'

    def __init__(self, name: str, help: str, label_names: Sequence[str] = (), *,
                 max_series: int = MAX_SERIES) -> None:
        super().__init__(name, help, label_names, max_series=max_series)
        self._values: Dict[Labels, float] = {}

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        values = self._values
        if labels not in values and len(values) >= self.max_series:
            labels = self._overflowed(labels)
        values[labels] = values.get(labels, 0.0) + amount

    def value(self, labels: Labels = ()) -> float:
        return self._values.get(labels, 0.0)

    def _samples(self) -> Iterator[Sample]:
        for labels, value in self._values.copy().items():
            yield Sample(labels=labels, value=value)


class Gauge(Metric):
    """A value that goes up and down: set directly, or summed from its sources when read."""
    kind: Kind = 'gauge'

    def __init__(self, name: str, help: str, label_names: Sequence[str] = (), *,
                 max_series: int = MAX_SERIES) -> None:
        super().__init__(name, help, label_names, max_series=max_series)
        self._values: Dict[Labels, float] = {}
        self._sources: Dict[int, Tuple[Labels, Source]] = {}
        self._next_token = 0

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        labels = self._admitted(labels)
        self._values[labels] = self._values.get(labels, 0.0) + amount

    def dec(self, labels: Labels = (), amount: float = 1.0) -> None:
        labels = self._admitted(labels)
        self._values[labels] = self._values.get(labels, 0.0) - amount

    def set(self, labels: Labels, value: float) -> None:
        self._values[self._admitted(labels)] = value

    def _admitted(self, labels: Labels) -> Labels:
        # A series is never removed, so the labels of an inc() and of its dec() fall in the same series.
        if labels not in self._values and len(self._values) >= self.max_series:
            return self._overflowed(labels)
        return labels

    def add_source(self, labels: Labels, source: Source) -> Callable[[], None]:
        """Read the source at every snapshot (added to the others of the same labels); returns its removal."""
        token, self._next_token = self._next_token, self._next_token + 1
        self._sources[token] = (labels, source)
        return lambda: self._remove_source(token)

    def add_weak_source(self, labels: Labels, owner: OwnerT, read: Callable[[OwnerT], float]) -> None:
        """Read the owner at every snapshot while it lives; the source is dropped with the owner."""
        remove: Callable[[], None] = lambda: None  # noqa: E731  (replaced at once, before any call)
        ref = weakref.ref(owner, lambda _: remove())

        def source() -> float:
            alive = ref()
            return 0.0 if alive is None else read(alive)

        remove = self.add_source(labels, source)

    def _remove_source(self, token: int) -> None:
        self._sources.pop(token, None)

    def value(self, labels: Labels = ()) -> float:
        return dict(self._read()).get(labels, 0.0)

    def _read(self) -> Iterator[Tuple[Labels, float]]:
        totals = self._values.copy()
        for labels, source in self._sources.copy().values():
            totals[labels] = totals.get(labels, 0.0) + source()
        return iter(totals.items())

    def _samples(self) -> Iterator[Sample]:
        for labels, value in self._read():
            yield Sample(labels=labels, value=value)


class Histogram(Metric):
    """The distribution of durations: a count per bucket, the sum and the count; a bisection per event."""
    kind: Kind = 'histogram'

    def __init__(self, name: str, help: str, label_names: Sequence[str] = (),
                 buckets: Sequence[float] = DEFAULT_BUCKETS, *, max_series: int = MAX_SERIES) -> None:
        super().__init__(name, help, label_names, max_series=max_series)
        bounds = sorted(float(bound) for bound in buckets if bound != math.inf)
        if not bounds or len(set(bounds)) != len(bounds):
            raise ValueError(f"The buckets of {name} must be distinct numbers, at least one; got {buckets!r}.")
        self.bounds: Tuple[float, ...] = tuple(bounds)
        self._counts: Dict[Labels, List[float]] = {}  # per bucket (not cumulative), then the sum last

    def observe(self, labels: Labels, value: float) -> None:
        counts = self._counts.get(labels)
        if counts is None:
            if len(self._counts) >= self.max_series:
                labels = self._overflowed(labels)
                counts = self._counts.get(labels)
            if counts is None:
                counts = self._counts[labels] = [0.0] * (len(self.bounds) + 2)
        counts[bisect.bisect_left(self.bounds, value)] += 1
        counts[-1] += value

    def count(self, labels: Labels = ()) -> float:
        counts = self._counts.get(labels)
        return sum(counts[:-1]) if counts is not None else 0.0

    def _samples(self) -> Iterator[Sample]:
        for labels, counts in self._counts.copy().items():
            counts = list(counts)
            cumulative, buckets = 0.0, []
            for bound, count in zip((*self.bounds, math.inf), counts[:-1], strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            yield Sample(labels=labels, value=cumulative, buckets=tuple(buckets), sum=counts[-1])


MetricT = TypeVar('MetricT', bound=Metric)


class Registry:
    """The metrics of one process (or of one test): declared once, read together."""

    def __init__(self) -> None:
        self._metrics: Dict[str, Metric] = {}

    def counter(self, name: str, help: str, label_names: Sequence[str] = (), *,
                max_series: int = MAX_SERIES) -> Counter:
        return self._add(Counter(name, help, label_names, max_series=max_series))

    def gauge(self, name: str, help: str, label_names: Sequence[str] = (), *,
              max_series: int = MAX_SERIES) -> Gauge:
        return self._add(Gauge(name, help, label_names, max_series=max_series))

    def histogram(self, name: str, help: str, label_names: Sequence[str] = (),
                  buckets: Sequence[float] = DEFAULT_BUCKETS, *, max_series: int = MAX_SERIES) -> Histogram:
        return self._add(Histogram(name, help, label_names, buckets, max_series=max_series))

    def get(self, name: str) -> Optional[Metric]:
        return self._metrics.get(name)

    def snapshot(self) -> List[Family]:
        """All metrics with their current values, in the order of their declaration."""
        families: List[Family] = []
        for metric in list(self._metrics.values()):
            families.append(_collect_retrying(metric))
        return families

    def _add(self, metric: MetricT) -> MetricT:
        if metric.name in self._metrics:
            raise ValueError(f"The metric {metric.name!r} is declared already.")
        self._metrics[metric.name] = metric
        return metric


def _collect_retrying(metric: Metric) -> Family:
    for attempt in range(_SNAPSHOT_ATTEMPTS):
        try:
            return metric.collect()
        except RuntimeError:  # "dictionary changed size during iteration": read in another thread
            if attempt == _SNAPSHOT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
