"""
Which API requests the operator made: the API server's counters minus the harness's own.

``apiserver_request_total`` has no label for the client, so the operator's
requests are what remains of a reading's delta after subtracting everything
the harness itself sent in between (``KubeApi.tally``), and after dropping the
control plane's own background traffic (lease renewals). A run with no operator
at all (``scenarios/baseline.py``) checks that this leaves ~0.

Requests are keyed ``"VERB resource"`` (``"PATCH benchmarkeds/status"``) or, for
non-resource URLs such as discovery, ``"GET /apis"``. WATCH requests are counted
by the API server when they end, i.e. mostly when the operator stops.

An informer of client-go 1.35 and newer (the Go peer's) lists by streaming: a WATCH
that sends the current objects first (a "watch-list"), not a LIST. The API server
counts each such initial listing in a metric of its own when it is complete; those
in a namespace are counted here as requests ``"WATCHLIST resource"``: the Go peer's
LIST, in the attribution and in the waiting for idleness alike.
"""
import asyncio
import collections
import dataclasses
import re
import time
from collections.abc import Callable, Mapping

from benchmarks.kubeapi import KubeApi, Tally
from kopf_testing.controlplane import RequestCounts, RequestKey, parse_request_counts, subtract_counts

# The control plane's own components' requests, never the operators' measured here: the leases are
# renewed every few seconds; the services are listed again now and then by the controller manager
# (seen in the windows of either framework and of the bound alike).
BACKGROUND_RESOURCES = frozenset({'leases', 'services'})
EVENTS = 'events'
# Busy: more CPU than an idle asyncio loop's timers use, less than processing anything does.
# The kernel accounts CPU time in ticks of 10 ms, hence the minimum of two ticks per interval.
BUSY_CPU_SHARE = 0.05  # of one core
BUSY_CPU_MIN = 0.02  # seconds
CPU_TICK = 0.2  # seconds between the readings of the operator's CPU time while waiting for idleness

_REQUEST_LINES = re.compile(rb'^apiserver_request_total\{.*$', re.MULTILINE)
_WATCH_LIST_LINES = re.compile(rb'^apiserver_watch_list_duration_seconds_count\{(.*)\}\s+(\S+)$', re.MULTILINE)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
WATCH_LIST = 'WATCHLIST'

Requests = dict[str, int]


async def read_counts(api: KubeApi) -> RequestCounts:
    """The request counters; only their lines are parsed (``/metrics`` is megabytes, polled often)."""
    text = await api.read_metrics()
    lines = b'\n'.join(_REQUEST_LINES.findall(text)).decode()
    return {**parse_request_counts(lines), **parse_watch_lists(text)}


def parse_watch_lists(text: bytes) -> RequestCounts:
    """The watch-lists completed in namespaces so far, as requests of the verb ``WATCHLIST``."""
    counts: RequestCounts = {}
    for labels_text, value in _WATCH_LIST_LINES.findall(text):
        labels = dict(_LABEL.findall(labels_text.decode()))
        if labels.get('scope') != 'namespace':  # the control plane's own informers watch whole clusters
            continue
        key = RequestKey(verb=WATCH_LIST, resource=labels.get('resource', ''), code='200',
                         group=labels.get('group', ''), version=labels.get('version', ''), scope='namespace')
        counts[key] = counts.get(key, 0) + int(float(value))
    return counts


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The server's counters and the harness's tally at (about) the same moment."""
    counts: RequestCounts
    tally: Tally
    time: float


async def take_snapshot(api: KubeApi) -> Snapshot:
    counts = await read_counts(api)
    return Snapshot(counts=counts, tally=collections.Counter(api.tally), time=time.monotonic())


def attribute(before: Snapshot, after: Snapshot) -> Requests:
    """The requests made by anyone but the harness and the control plane between two snapshots."""
    delta = subtract_counts(after.counts, before.counts)
    harness = after.tally - before.tally
    return subtract_tally(group_requests(delta), harness)


def group_requests(counts: RequestCounts) -> Requests:
    """Sum the series over status codes and API versions, keyed by verb and resource."""
    grouped: collections.Counter[str] = collections.Counter()
    for key, value in counts.items():
        verb, resource, subresource = key.verb, key.resource, key.subresource
        if resource in BACKGROUND_RESOURCES:
            continue
        if resource:
            grouped[f'{verb} {resource}/{subresource}' if subresource else f'{verb} {resource}'] += value
        else:
            grouped[f'{verb} /{subresource}'] += value
    return dict(grouped)


def subtract_tally(requests: Mapping[str, int], tally: Tally) -> Requests:
    result = dict(requests)
    for (verb, resource), count in tally.items():
        key = f'{verb} {resource}'
        result[key] = result.get(key, 0) - count
    return {key: value for key, value in sorted(result.items()) if value}


def total(requests: Mapping[str, int], *, events: bool = False, watches: bool = True) -> int:
    """
    The requests to resources, without the k8s-events posted (unless asked) and optionally without WATCHes.

    Non-resource requests (discovery: ``GET /apis``) are listed but not in the totals: the controller
    manager makes them periodically too, and they cannot be told apart from an operator's.
    The figures leave WATCHes out (``watches=False``): the API server counts a WATCH when it ends,
    the operator's own only when it stops (after its figures are taken); those that end within a
    phase are the control plane's components renewing theirs.
    """
    return sum(value for key, value in requests.items()
               if _resource(key) and (_resource(key) == EVENTS) == events
               and (watches or not key.startswith('WATCH ')))


def events_posted(requests: Mapping[str, int]) -> int:
    return sum(value for key, value in requests.items() if _resource(key) == EVENTS)


def _resource(key: str) -> str:
    """The resource of a key; empty for non-resource URLs (``"GET /apis"``)."""
    return key.partition(' ')[2].partition('/')[0]


class IdleTimeout(Exception):
    pass


async def wait_idle(
        api: KubeApi,
        *,
        quiet: float,
        timeout: float,
        condition: Callable[[], bool] = lambda: True,
        activity: Callable[[], float] = lambda: 0.0,
        cpu: Callable[[], float] | None = None,
        require_requests: bool = False,
        since: Snapshot | None = None,
        poll: float = 1.0,
) -> float:
    """
    Wait until the operator makes no requests and the condition holds, for ``quiet`` seconds.

    Returns the monotonic time of the last activity seen: the last change of the
    operator's request counts (at the resolution of ``poll``: ``/metrics`` is
    megabytes), the last short interval in which the operator's ``cpu()`` time
    grew noticeably (at a resolution of ``CPU_TICK``), or ``activity()`` (e.g.
    the last watch event of the objects, which is exact). The CPU matters when
    the operator processes what it has listed without making any requests. With
    ``require_requests``, idleness counts only after the operator's first
    request (since the given snapshot): a process still importing is not idle,
    it has not started.
    """
    started = time.monotonic()
    previous = await take_snapshot(api)
    first = since or previous
    last_change = started
    tick = min(CPU_TICK, poll)
    cpu_time, cpu_before = time.monotonic(), (cpu() if cpu is not None else 0.0)
    while True:
        await asyncio.sleep(tick)
        now = time.monotonic()
        if cpu is not None:
            cpu_now = cpu()
            if cpu_now - cpu_before > max(BUSY_CPU_MIN, BUSY_CPU_SHARE * (now - cpu_time)):
                last_change = now
            cpu_time, cpu_before = now, cpu_now
        if now - previous.time < poll:
            continue
        current = await take_snapshot(api)
        if is_activity(attribute(previous, current)):
            last_change = current.time
        previous = current
        last_activity = max(last_change, activity())
        started_working = not require_requests or is_activity(attribute(first, current))
        if started_working and condition() and current.time - last_activity >= quiet:
            return last_activity
        if current.time - started > timeout:
            raise IdleTimeout(f'The operator is not idle after {timeout:.0f}s '
                              f'(condition holds: {condition()}, requests meanwhile: {attribute(first, current)}).')


def is_activity(requests: Requests) -> bool:
    """
    Whether the requests show the operator at work: any to a resource but WATCHes.

    WATCHes are counted when they end (see ``total``); non-resource requests
    (``GET /apis``, ``GET /openapi/v3``) come from the controller manager at
    random moments too, which would make an operator long idle look busy.
    """
    return any(_resource(key) and not key.startswith('WATCH ') for key, value in requests.items() if value)
