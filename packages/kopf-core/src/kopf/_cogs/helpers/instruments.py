"""
The figures that an operator's owner watches, recorded by the framework as it works.

They are named in the manner of controller-runtime's (``kopf_`` instead of
``controller_runtime_``; counters end in ``_total``, durations in ``_seconds``)
and kept in one registry per process, :data:`REGISTRY`, as controller-runtime
and ``prometheus_client`` keep theirs: several operators in one process add up.

The engines call the small functions below (or add sources to the gauges);
the label values are strings: a resource is ``plural.group`` as ``kubectl``
names it (``pods`` in the core group), and empty for the activities (startup,
cleanup, login, probes), which belong to no resource.

The state of the shards (scale-out) is to be reported here too, once it lands:
a gauge of the shards held, by resource, fed as :data:`LEADER` is fed.
"""
from __future__ import annotations

from kopf._cogs.helpers import metrics

REGISTRY = metrics.Registry()

# The outcomes of the handlers' runs.
SUCCESS = 'success'
TEMPORARY_ERROR = 'temporary_error'  # retried later: kopf.TemporaryError, or an arbitrary error (errors=TEMPORARY)
PERMANENT_ERROR = 'permanent_error'  # not retried: kopf.PermanentError, errors=PERMANENT, the retries/timeout over
IGNORED_ERROR = 'ignored_error'  # an arbitrary error of a handler with errors=IGNORED
RETRY = 'retry'  # the handler is done, its sub-handlers are not: retried soon

HANDLER_RUNS = REGISTRY.counter(
    'kopf_handler_runs_total', "The handlers' runs by handler id, resource, and outcome.",
    ('handler', 'resource', 'outcome'))
HANDLER_DURATION = REGISTRY.histogram(
    'kopf_handler_duration_seconds', "How long the handlers' runs take, by handler id and resource.",
    ('handler', 'resource'))
OBJECTS_WATCHED = REGISTRY.gauge(
    'kopf_objects_watched', "The objects known in the watch-streams, by resource.", ('resource',))
OBJECTS_WAITING = REGISTRY.gauge(
    'kopf_objects_waiting', "The objects whose latest change waits for its handling, by resource.", ('resource',))
QUEUE_DURATION = REGISTRY.histogram(
    'kopf_queue_duration_seconds', "How long an object's change waits from its arrival to its handling, "
    "by resource.", ('resource',))
WATCH_RESTARTS = REGISTRY.counter(
    'kopf_watch_restarts_total', "The watch-streams' new requests after the first one (reconnects, "
    "re-listings), by resource.", ('resource',))
API_REQUESTS = REGISTRY.counter(
    'kopf_rest_client_requests_total', "The requests to the Kubernetes API, by verb and status code "
    "('error' for no response); WATCH for the streams.", ('verb', 'code'))
API_DURATION = REGISTRY.histogram(
    'kopf_rest_client_request_duration_seconds', "How long the requests to the Kubernetes API take until "
    "their answer is read (the streams: until their headers), by verb.", ('verb',))
DAEMONS_RUNNING = REGISTRY.gauge(
    'kopf_daemons_running', "The daemons running, by handler id and resource.", ('handler', 'resource'))
TIMERS_RUNNING = REGISTRY.gauge(
    'kopf_timers_running', "The timers running, by handler id and resource.", ('handler', 'resource'))
LEADER = REGISTRY.gauge(
    'kopf_leader_election_master_status', "1 while this operator holds the Lease of the leader election, "
    "0 while it waits for it, by Lease (namespace/name).", ('lease',))


def record_handler_run(handler: str, resource: str, outcome: str, seconds: float) -> None:
    HANDLER_RUNS.inc((handler, resource, outcome))
    HANDLER_DURATION.observe((handler, resource), seconds)


def record_api_request(verb: str, code: str, seconds: float) -> None:
    """
    One request to the Kubernetes API and how long it took (for API client implementations).

    ``verb`` is the HTTP method (``WATCH`` for a stream), ``code`` the status code
    as a string (``error`` if no response came); call it from the event loop.
    """
    API_REQUESTS.inc((verb, code))
    API_DURATION.observe((verb,), seconds)
