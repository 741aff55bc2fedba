"""
The API server's request counters, as read from its ``/metrics`` endpoint.

Benchmarks and tests count the requests an operator makes (e.g. "no more than
one LIST per resource at start-up") by reading ``apiserver_request_total``
before and after and subtracting. Only that metric is parsed, from the
Prometheus text format, without a Prometheus client library.

Example::

    before = control_plane.read_request_counts()
    ...  # run the operator
    delta = subtract_counts(control_plane.read_request_counts(), before)
    assert sum_counts(delta, verb='LIST', resource='configmaps') == 1
"""
import re
from collections.abc import Mapping
from typing import NamedTuple

METRIC_NAME = 'apiserver_request_total'

_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$')
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"\s*,?\s*')


class RequestKey(NamedTuple):
    """The labels of one ``apiserver_request_total`` series; the first three matter most."""
    verb: str  # GET, LIST, WATCH, CREATE, PATCH, UPDATE, DELETE, APPLY, ...
    resource: str  # plural, e.g. "configmaps"; empty for non-resource URLs like /readyz
    code: str  # HTTP status, e.g. "200"
    group: str = ''
    version: str = ''
    subresource: str = ''
    scope: str = ''  # resource, namespace, cluster; empty for non-resource URLs
    component: str = ''
    dry_run: str = ''


RequestCounts = dict[RequestKey, int]


def parse_request_counts(text: str) -> RequestCounts:
    """Parse the Prometheus text exposition, keeping only ``apiserver_request_total``."""
    counts: RequestCounts = {}
    for line in text.splitlines():
        if not line.startswith(METRIC_NAME):
            continue
        match = _SAMPLE.match(line)
        if match is None or match.group('name') != METRIC_NAME:
            continue
        labels = {m.group('key'): _unescape(m.group('value')) for m in _LABEL.finditer(match.group('labels') or '')}
        key = RequestKey(**{field: labels.get(field, '') for field in RequestKey._fields})
        counts[key] = counts.get(key, 0) + int(float(match.group('value')))
    return counts


def subtract_counts(after: Mapping[RequestKey, int], before: Mapping[RequestKey, int]) -> RequestCounts:
    """The requests made in between two readings; series with no new requests are dropped."""
    delta = {key: value - before.get(key, 0) for key, value in after.items()}
    return {key: value for key, value in delta.items() if value}


def sum_counts(counts: Mapping[RequestKey, int], **labels: str) -> int:
    """The total over all series matching the given labels, e.g. ``verb='LIST', resource='pods'``."""
    unknown = set(labels) - set(RequestKey._fields)
    if unknown:
        raise TypeError(f'Unknown labels: {sorted(unknown)}')
    return sum(count for key, count in counts.items()
               if all(getattr(key, name) == wanted for name, wanted in labels.items()))


def _unescape(value: str) -> str:
    # One pass, so that an escaped backslash followed by "n" is not mistaken for a newline.
    return re.sub(r'\\(.)', lambda m: '\n' if m.group(1) == 'n' else m.group(1), value)
