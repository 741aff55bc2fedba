"""
All the settings of an operator, grouped into sections.

Every operator (even several in one process, see embedding) has its own
:class:`OperatorSettings`. They are usually tuned in ``@kopf.on.startup``
handlers; every setting has a default that works for most operators.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import warnings
from typing import TYPE_CHECKING, Iterable, Optional, Union

from kopf._cogs.configs.selectormaps import SelectorMapping, as_selector_mapping

if TYPE_CHECKING:
    from kopf._cogs.configs import diffbase, progress

# The Fibonacci numbers from 1 second to 10 minutes: throttling of unexpected errors.
_FIBONACCI_DELAYS = (1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610)

# Roughly a minute of retries of networking errors and 5xx before escalating.
_NETWORKING_BACKOFFS = (1, 1, 2, 3, 5, 8, 13, 21)

# Explicit k8s-events are worth a minute of retries; the logged ones only ~10 seconds.
_POSTING_DEFAULT_BACKOFFS = (1, 1, 2, 3, 5, 8, 13, 21)
_POSTING_LOGGING_BACKOFFS = (1, 1, 2, 3, 5)


@dataclasses.dataclass
class ProcessSettings:
    """Settings of the operator's process as a whole."""

    ultimate_exiting_timeout: Optional[float] = 10 * 60
    """
    How long the graceful exit may take after a signal (SIGTERM/SIGINT) before the
    operator is killed (SIGKILL), e.g. when stuck in cleanup handlers or daemons.
    ``None`` disables it. The default is above Kubernetes' usual grace period,
    so that Kubernetes kills the pod first if it can.
    """


@dataclasses.dataclass
class PostingSettings:
    """Posting of log messages of handled objects as Kubernetes events."""

    enabled: bool = True
    """Whether to post k8s-events at all (also for ``kopf.info()`` and alike)."""

    loggers: bool = False
    """
    Whether the per-object log messages (``logger`` in handlers, and the framework's
    own, e.g. ``Handler 'create_fn' succeeded.``) are posted as k8s-events.

    Off by default, as in Kopf 1.45: only the explicit ``kopf.event()``, ``kopf.info()``,
    ``kopf.warn()`` and ``kopf.exception()`` are posted, so that one object's
    create→update→delete costs no event requests instead of one per message.
    With ``True``, ``enabled`` and ``level`` apply to the log messages too.
    """

    level: int = logging.INFO
    """The minimal level of the log messages posted as k8s-events."""

    default_backoffs: Union[float, Iterable[float]] = _POSTING_DEFAULT_BACKOFFS
    """
    The pauses between retries of a failed post of an explicit ``kopf.event()``,
    ``kopf.info()``, ``kopf.warn()`` or ``kopf.exception()`` without ``backoffs=``;
    after the last one, the k8s-event is logged and dropped. A single number
    means one retry; an empty sequence means no retries. For k8s-events, this
    replaces ``settings.networking.error_backoffs``.
    """

    logging_backoffs: Union[float, Iterable[float]] = _POSTING_LOGGING_BACKOFFS
    """The same as ``default_backoffs``, for the log messages posted as k8s-events."""

    worker_limit: Optional[int] = None
    """How many objects' k8s-events are posted at the same time (unlimited if ``None``)."""

    idle_timeout: float = 1.0
    """How long an object's posting worker lingers with no new k8s-events before exiting."""

    reporting_component: str = 'kopf'
    """The component that reports the k8s-events (``kubectl describe``'s "From" column)."""

    reporting_instance: str = 'dev'
    """The instance of the reporting component (the events' ``reportingInstance``)."""

    event_name_prefix: str = 'kopf-event-'
    """The prefix of the k8s-events' generated names."""


@dataclasses.dataclass
class PeeringSettings:
    """Peering of several operators of the same kind (see "Peering")."""

    name: str = 'default'
    """The name of the peering object (``KopfPeering``/``ClusterKopfPeering``)."""

    mandatory: bool = False
    """Whether to pause until the peering object exists (instead of standalone)."""

    standalone: bool = False
    """Whether to skip peering entirely and run as the only operator."""

    stealth: bool = False
    """Whether to keep the keep-alives out of the logs (they are sent anyway)."""

    priority: int = 0
    """The operator's priority: higher priorities win, lower ones pause."""

    lifetime: int = 60
    """How long (seconds) the keep-alive lasts, and so how often it is renewed."""

    clusterwide: bool = False
    """Whether the cluster-scoped peering is used (set from the operator's scope)."""

    @property
    def namespaced(self) -> bool:
        return not self.clusterwide

    @namespaced.setter
    def namespaced(self, value: bool) -> None:
        self.clusterwide = not value


@dataclasses.dataclass
class WatchingSettings:
    """The watch-streams: timeouts and reconnection."""

    server_timeout: Optional[float] = None
    """The watch duration requested from the server (``timeoutSeconds``)."""

    client_timeout: Optional[float] = None
    """The client-side limit of one watch request's duration (forever if ``None``)."""

    connect_timeout: Optional[float] = None
    """The TCP handshake timeout of watch requests (falls back to networking's)."""

    reconnect_backoff: float = 0.1
    """The pause between watch requests: reconnect fast, but never flood the API."""

    inactivity_timeout: Optional[float] = 70.0
    """
    How long a watch-stream may stay completely silent before it is considered
    dead and is re-established. With bookmarks requested, a live API server
    sends something at least every minute or so; ``None`` disables the check.
    """

    chunk_size: Optional[int] = None
    """How many objects to list per request (``limit=``); the whole list at once if ``None``."""

    initial_streaming: bool = False
    """Whether the existing objects come in the watch-stream (``sendInitialEvents``), not a list."""

    label_selectors: SelectorMapping[str] = dataclasses.field(default_factory=SelectorMapping)
    """Resources (as in the decorators) to ``labelSelector`` of their lists and watches."""

    field_selectors: SelectorMapping[str] = dataclasses.field(default_factory=SelectorMapping)
    """Resources (as in the decorators) to ``fieldSelector`` of their lists and watches."""

    shard_selectors: SelectorMapping[str] = dataclasses.field(default_factory=SelectorMapping)
    """Resources (as in the decorators) to the server-side shard selector (the first that matches)."""

    def __setattr__(self, name: str, value: object) -> None:
        # A plain dict assigned to a selectors' setting works as if it were a SelectorMapping (None: empty).
        if name.endswith('_selectors'):
            value = as_selector_mapping(value, what=f"settings.watching.{name}")
        super().__setattr__(name, value)


@dataclasses.dataclass
class QueueingSettings:
    """The per-object workers and their queues of events."""

    worker_limit: Optional[int] = None
    """How many objects are processed at the same time (unlimited if ``None``)."""

    idle_timeout: float = 5.0
    """How long an object's worker lingers with no new events before exiting."""

    exit_timeout: float = 2.0
    """How long to wait for the workers to finish on the operator's exit."""

    error_delays: Iterable[float] = _FIBONACCI_DELAYS
    """The throttling delays after unexpected errors of the framework (re-iterable)."""

    batch_window: float = 0.0
    """
    How long to wait for more events of the same object before processing the latest.

    ``0``: only the events already arrived are merged, as in Kopf 1.45.2 (where it affects nothing).
    """


@dataclasses.dataclass
class ScanningSettings:
    """The scanning of the cluster's resources and namespaces at runtime."""

    disabled: bool = False
    """Whether to skip re-scanning (e.g. when RBAC does not allow watching CRDs)."""


@dataclasses.dataclass
class AdmissionSettings:
    """Admission webhooks (see "Admission control")."""

    server: Optional[object] = None
    """A webhook server or tunnel (e.g. ``kopf.WebhookServer()``); none by default."""

    managed: Optional[str] = None
    """The name of the webhook configurations managed by the operator (none by default)."""


@dataclasses.dataclass
class ExecutionSettings:
    """The executor of synchronous handlers and daemons."""

    executor: concurrent.futures.Executor = dataclasses.field(
        default_factory=concurrent.futures.ThreadPoolExecutor)
    """The executor for sync handlers (a thread pool by default)."""

    default_backoff: float = 60
    """The delay before retrying a handler after an arbitrary error, unless its ``backoff=`` is set."""

    _max_workers: Optional[int] = None

    @property
    def max_workers(self) -> Optional[int]:
        return self._max_workers

    @max_workers.setter
    def max_workers(self, value: int) -> None:
        # Only thread pools can be resized: replace the executor with a new one.
        if value < 1:
            raise ValueError(f"settings.execution.max_workers must be positive, got {value!r}.")
        self._max_workers = value
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=value)


@dataclasses.dataclass
class BackgroundSettings:
    """Daemons and timers (see "Daemons" and "Timers")."""

    cancellation_polling: float = 60
    """How often to check a daemon that does not stop when it is asked to."""

    instant_exit_timeout: Optional[float] = None
    """
    How long (seconds) to wait for the daemons of a deleted object to exit "instantly" when
    asked to stop, so that the object is released in the same handling cycle (not a later one).
    If ``None``, ``instant_exit_zero_time_cycles`` is used instead.
    """

    instant_exit_zero_time_cycles: Optional[int] = 10
    """
    How many zero-time cycles of the event loop to give the daemons to exit "instantly"
    (without a timeout, no real time passes). ``None`` or ``0``: no instant exit.
    """


@dataclasses.dataclass
class NetworkingSettings:
    """The requests to the Kubernetes API (not the watch-streams)."""

    request_timeout: Optional[float] = 5 * 60
    """The total timeout of one request, including retries' single attempts."""

    connect_timeout: Optional[float] = None
    """The TCP handshake timeout of regular requests (limited by the total if ``None``)."""

    error_backoffs: Union[float, Iterable[float]] = _NETWORKING_BACKOFFS
    """The pauses between retries of networking errors and 5xx, then it escalates."""

    enforce_retry_after: bool = False
    """
    Whether the server's ``Retry-After`` (HTTP 429) replaces the back-off even if shorter.

    By default, the longer of the two is waited: the server's wish is the minimum.
    """

    trust_env: bool = False
    """
    Whether the HTTP client uses the proxy environment variables (``HTTP_PROXY``,
    ``HTTPS_PROXY``, ``NO_PROXY``) and ``~/.netrc``; by default, it connects directly.
    """

    def iter_error_backoffs(self) -> Iterable[float]:
        """The backoffs as an iterable: a single number means a single backoff."""
        if isinstance(self.error_backoffs, (int, float)):
            return (float(self.error_backoffs),)
        return self.error_backoffs


def _default_progress_storage() -> progress.ProgressStorage:
    from kopf._cogs.configs import progress
    return progress.SmartProgressStorage()


def _default_diffbase_storage() -> diffbase.DiffBaseStorage:
    from kopf._cogs.configs import diffbase
    return diffbase.AnnotationsDiffBaseStorage()


@dataclasses.dataclass
class PersistenceSettings:
    """Where and how the handling state is kept on the objects."""

    finalizer: str = 'kopf.zalando.org/KopfFinalizerMarker'
    """The finalizer that blocks the objects' deletion while handlers need them."""

    progress_storage: progress.ProgressStorage = dataclasses.field(
        default_factory=_default_progress_storage)
    """How the handlers' progress (retries, delays, outcomes) is stored."""

    diffbase_storage: diffbase.DiffBaseStorage = dataclasses.field(
        default_factory=_default_diffbase_storage)
    """How the last handled configuration (the diff-base) is stored."""

    consistency_timeout: float = 5.0
    """
    How long (seconds) to wait for the object's version patched by the framework to arrive
    in the watch-stream; the older events are skipped meanwhile. After it, the latest of
    them is processed anyway. ``0`` processes them at once (no waiting).
    """


@dataclasses.dataclass
class OperatorSettings:
    """All the settings of one operator."""
    process: ProcessSettings = dataclasses.field(default_factory=ProcessSettings)
    posting: PostingSettings = dataclasses.field(default_factory=PostingSettings)
    peering: PeeringSettings = dataclasses.field(default_factory=PeeringSettings)
    watching: WatchingSettings = dataclasses.field(default_factory=WatchingSettings)
    queueing: QueueingSettings = dataclasses.field(default_factory=QueueingSettings)
    scanning: ScanningSettings = dataclasses.field(default_factory=ScanningSettings)
    admission: AdmissionSettings = dataclasses.field(default_factory=AdmissionSettings)
    execution: ExecutionSettings = dataclasses.field(default_factory=ExecutionSettings)
    background: BackgroundSettings = dataclasses.field(default_factory=BackgroundSettings)
    networking: NetworkingSettings = dataclasses.field(default_factory=NetworkingSettings)
    persistence: PersistenceSettings = dataclasses.field(default_factory=PersistenceSettings)
    leader_election: LeaderElectionSettings = dataclasses.field(default_factory=lambda: LeaderElectionSettings())
    sharding: ShardingSettings = dataclasses.field(default_factory=lambda: ShardingSettings())

    @property
    def batching(self) -> QueueingSettings:
        """The former name of ``queueing``, kept for the operators that still use it."""
        warnings.warn("Batching settings are now queueing settings. "
                      "Please rename `settings.batching` -> `settings.queueing`",
                      DeprecationWarning, stacklevel=2)
        return self.queueing


@dataclasses.dataclass
class LeaderElectionSettings:
    """
    Leader election over a ``coordination.k8s.io/v1`` Lease (off by default; see docs/scaling.md).

    The durations are client-go's, with its defaults and meanings.
    """

    enabled: bool = False
    """Whether the replicas compete for the Lease, and only its holder handles the objects."""

    lease_name: Optional[str] = None
    """The Lease's name; ``kopf-leader-<peering name>`` if ``None``."""

    lease_namespace: Optional[str] = None
    """The Lease's namespace; if ``None``: ``$POD_NAMESPACE``, the service account's, or the first served one."""

    lease_duration: float = 15
    """How long (seconds) the candidates wait after the Lease last changed before taking it over."""

    renew_deadline: float = 10
    """How long (seconds) the leader keeps trying to renew before it stops handling (< lease_duration)."""

    retry_period: float = 2
    """How often (seconds) the leader renews, and the candidates try (< renew_deadline)."""


@dataclasses.dataclass
class ShardingSettings:
    """Automatic sharding: the replicas split the objects by a hash (off by default; see docs/scaling.md)."""

    enabled: bool = False
    """Whether every replica holds a membership Lease and serves only its share of the objects."""

    hashed_field: str = 'uid'
    """What is hashed to split the objects: ``'uid'`` (each object) or ``'namespace'`` (whole namespaces)."""

    lease_prefix: Optional[str] = None
    """The replicas' Leases are ``<prefix>-<hash>``; ``kopf-shard-<peering name>`` if ``None``."""

    lease_namespace: Optional[str] = None
    """The Leases' namespace; if ``None``: ``$POD_NAMESPACE``, the service account's, or the first served one."""

    lease_duration: float = 15  # the Leases' timings (seconds), as in settings.leader_election
    renew_deadline: float = 10
    retry_period: float = 2
