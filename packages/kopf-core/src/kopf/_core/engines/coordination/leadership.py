"""
Leader election: only the replica that holds the Lease handles the objects.

Off by default. With ``kopf run --leader-election`` (or
``settings.leader_election.enabled``), every replica is a candidate for one
Lease (see :mod:`leases` for its semantics, which are client-go's). The
:class:`Elector` of a replica keeps trying to acquire it; once it holds it,
it renews it every ``retry_period``; if it cannot renew it for
``renew_deadline``, it steps down (the operator stops handling) well before
the lease can expire for the others; and when the operator exits gracefully,
it releases the Lease so that another replica takes over at once.

The candidates watch the Lease (if permitted), so that a released Lease is
taken over at once rather than on the next poll; they poll every
``retry_period`` if they cannot watch.

A deposed leader becomes a candidate again (client-go's programs usually exit
instead). The elector only reports its leadership via the ``leading`` event;
the reactor decides what that means (see ``reactor.coordination``).
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import os
import re
from typing import Any, Collection, Dict, Mapping, Optional, Tuple

from kopf._cogs.aiokits import aiowaiting
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.helpers import instruments
from kopf._cogs.structs import references
from kopf._core.engines.coordination import leases, leasewatching

logger = logging.getLogger('kopf.engines.leadership')

DEFAULT_LEASE_PREFIX = 'kopf-leader-'
SERVICE_ACCOUNT_NAMESPACE_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/namespace'

# The names the API server accepts: DNS subdomains for Leases, DNS labels for namespaces (RFC 1123).
_DNS_SUBDOMAIN = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
_DNS_LABEL = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?')
_NOT_LITERAL = frozenset('*?!,[]')


def check_lease_name(name: str) -> None:
    if not isinstance(name, str) or len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        raise leases.LeaseError(
            f"The leader election's Lease name {name!r} is not valid in Kubernetes: use at most 253 "
            f"lowercase letters, digits, '-' and '.', starting and ending with a letter or a digit "
            f"(e.g. 'my-operator-leader').")


def check_lease_namespace(namespace: str) -> None:
    if not isinstance(namespace, str) or len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        raise leases.LeaseError(
            f"The leader election's namespace {namespace!r} is not a valid namespace name: use at most 63 "
            f"lowercase letters, digits and '-', starting and ending with a letter or a digit.")


def default_lease_name(peering_name: str) -> str:
    """``kopf-leader-<peering name>``: the peering name lowercased, other characters made '-'."""
    tail = re.sub(r'[^a-z0-9.-]+', '-', peering_name.lower()).strip('-.') or 'default'
    return (DEFAULT_LEASE_PREFIX + tail)[:253].rstrip('-.')


def detect_lease_namespace(*, served: Collection[references.NamespacePattern], clusterwide: bool) -> str:
    """
    Where the Lease lives if not told: the pod's namespace, else the first namespace served by name.

    The pod's namespace is ``$POD_NAMESPACE`` (set from the downward API), else
    the namespace of the mounted service account. Out of a pod, it is the first
    namespace served by a literal name (not a glob, negation or regexp);
    cluster-wide, there is none: the namespace must be given.
    """
    env = os.environ.get('POD_NAMESPACE', '').strip()
    if env:
        return env
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_PATH, encoding='utf-8') as f:
            mounted = f.read().strip()
    except OSError:
        mounted = ''
    if mounted:
        return mounted
    literals = [pattern for pattern in served
                if isinstance(pattern, str) and pattern and not _NOT_LITERAL.intersection(pattern)]
    if literals and not clusterwide:
        return literals[0]
    scope = "serves the whole cluster" if clusterwide else "serves no namespace by its name"
    raise leases.LeaseError(
        f"Leader election needs a namespace for its Lease: the operator is not in a pod ($POD_NAMESPACE is "
        f"unset, no service account is mounted) and {scope}. Set --leader-election-namespace=NAMESPACE "
        f"(or settings.leader_election.lease_namespace).")


def resolve_lease(
        settings: configuration.OperatorSettings,
        *,
        served: Collection[references.NamespacePattern],
        clusterwide: bool,
) -> Tuple[leases.LeaseRef, leases.LeaseTimings]:
    """The Lease and the timings as the settings say; :class:`LeaseError` (one clear line) if they are bad."""
    election = settings.leader_election
    name = election.lease_name if election.lease_name is not None else default_lease_name(settings.peering.name)
    check_lease_name(name)
    namespace = election.lease_namespace
    if namespace is None:
        namespace = detect_lease_namespace(served=served, clusterwide=clusterwide)
    check_lease_namespace(namespace)
    timings = leases.LeaseTimings(lease_duration=election.lease_duration, renew_deadline=election.renew_deadline,
                                  retry_period=election.retry_period)
    timings.check()
    return leases.LeaseRef(namespace=namespace, name=name), timings


class _Troubles:
    """The failures to reach the Lease: each kind said once (then at DEBUG), the recovery said once."""

    def __init__(self, ref: leases.LeaseRef, timings: leases.LeaseTimings) -> None:
        self.ref = ref
        self.timings = timings
        self.said: Optional[Tuple[type, Optional[int]]] = None

    def report(self, error: BaseException) -> None:
        kind = (type(error), getattr(error, 'status', None))
        level = logging.DEBUG if kind == self.said else logging.ERROR
        self.said = kind
        retrying = f"retrying every {self.timings.retry_period:g}s"
        if isinstance(error, apierrors.APIForbiddenError):
            logger.log(level, f"Not permitted to use the Lease {self.ref} for leader election ({error}). "
                              f"Grant the operator get, create, update, patch and watch on the leases of "
                              f"coordination.k8s.io in {self.ref.namespace!r}; {retrying}.")
        elif isinstance(error, asyncio.TimeoutError):
            logger.log(level, f"The Lease {self.ref} did not answer in time for leader election; {retrying}.")
        else:
            logger.log(level, f"Failed to read or write the Lease {self.ref} for leader election; "
                              f"{retrying}. The error: {error!r}")

    def over(self) -> None:
        if self.said is not None:
            logger.info(f"The Lease {self.ref} is usable again for leader election.")
            self.said = None


class Elector:
    """
    The leadership of one identity over one Lease: campaign, hold, step down, release.

    ``leading`` is set while this identity holds the Lease and has renewed it
    within the renew deadline; it is cleared as soon as either stops being true.
    """

    def __init__(
            self,
            *,
            client: protocols.ApiClient,
            ref: leases.LeaseRef,
            identity: str,
            timings: leases.LeaseTimings,
            leading: asyncio.Event,
            watch: bool = True,
    ) -> None:
        self.client = client
        self.ref = ref
        self.identity = identity
        self.timings = timings
        self.leading = leading
        self.watch = watch
        self.observation = leases.Observation()
        self.watched = False  # a watch-stream of the Lease is open: no need to poll
        self.wakeup = asyncio.Event()
        self.attempted = asyncio.Event()  # the first attempt is over (its troubles, if any, are said)
        self.troubles = _Troubles(ref, timings)
        self.oddities: Dict[str, Any] = {}  # the oddities of another holder's Lease said: kind -> state
        self.standing_by_for: Optional[str] = None  # the holder last said to lead while we wait
        self.renewed_at: Optional[float] = None  # loop time of the last successful renewal's request

    async def run(self) -> None:
        """Campaign and lead until cancelled; then release the Lease if held (a graceful exit)."""
        watcher = asyncio.create_task(self._watch(), name=f'watcher of the Lease {self.ref}') if self.watch else None
        unsource = instruments.LEADER.add_source((str(self.ref),), lambda: float(self.leading.is_set()))
        try:
            while True:
                await self._campaign()
                self.leading.set()
                logger.info(f"Became the leader: the Lease {self.ref} is held by {self.identity!r}.")
                reason = await self._hold()
                self.leading.clear()
                logger.info(f"Lost the leadership of the Lease {self.ref} ({reason}); stopped handling.")
        finally:
            unsource()
            if watcher is not None:
                watcher.cancel()
                await asyncio.wait([watcher])

    async def release(self) -> None:
        """Give the Lease up if held, so that another replica takes over at once (within a retry period)."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        try:
            released = await aiowaiting.run_within(leases.release_lease(
                self.client, self.ref, identity=self.identity, observation=self.observation,
                moment=_wall_now()), timeout=self.timings.retry_period)
        except (Exception, asyncio.TimeoutError) as e:  # the exit goes on: the lease expires by itself
            logger.warning(f"Failed to release the Lease {self.ref}; it expires by itself in "
                           f"{self.timings.lease_duration:g}s. The error: {e!r}")
            return
        if released:
            logger.info(f"Released the Lease {self.ref} for the next leader.")

    def renewed(self) -> bool:
        """Whether we lead and renewed within the renew deadline: by the clock, not waiting for the loop to say."""
        if not self.leading.is_set() or self.renewed_at is None:
            return False
        return asyncio.get_running_loop().time() - self.renewed_at < self.timings.renew_deadline

    def observe(self, body: Mapping[str, Any]) -> None:
        """A watch-event of the Lease: update the view; wake the loop if something is to be done."""
        record = leases.LeaseRecord.parse(body)
        if self.leading.is_set() and record.holder == self.identity:
            return  # our own renewals: known from the writes' answers (and maybe older than them)
        self.observation.notice(record, now=asyncio.get_running_loop().time())
        self._notice_oddities(record)
        if self.leading.is_set() or not record.holder:
            self.wakeup.set()  # taken from us; or released: take it over now

    async def _campaign(self) -> None:
        """Try until this identity holds the Lease (polling, or waiting for its expiry while watched)."""
        loop = asyncio.get_running_loop()
        while True:
            self.wakeup.clear()  # before looking: a change noticed from now on wakes the sleep below
            expiry = leases.expires_in(observation=self.observation, now=loop.time(), timings=self.timings)
            calm = self.watched and self.troubles.said is None
            if calm and expiry is not None and expiry > 0:
                await self._sleep(expiry)  # held elsewhere: nothing to try until it expires here
                continue
            if await self._attempt(timeout=None):
                return
            self._say_standing_by()
            expiry = leases.expires_in(observation=self.observation, now=loop.time(), timings=self.timings)
            if self.troubles.said is not None or expiry is None:
                await self._sleep(self.timings.retry_period)  # failed, or lost a race: not in a tight loop
            elif not self.watched:
                await self._sleep(min(self.timings.retry_period, expiry))  # polling, but not past the expiry

    def _say_standing_by(self) -> None:
        """Once per holder: who leads while this replica waits (for the logs and for the tests)."""
        record = self.observation.record
        holder = record.holder if record is not None else None
        if holder and holder != self.standing_by_for:
            logger.debug(f"The Lease {self.ref} is held by {holder!r}: standing by as a candidate.")
        self.standing_by_for = holder

    async def _hold(self) -> str:
        """Renew the Lease every retry period until it cannot be renewed in time; say why it is lost."""
        loop = asyncio.get_running_loop()
        while True:
            self.wakeup.clear()
            await self._sleep(self.timings.retry_period)
            assert self.renewed_at is not None
            deadline = self.renewed_at + self.timings.renew_deadline
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    return f"not renewed within the renew deadline of {self.timings.renew_deadline:g}s"
                held = await self._attempt(timeout=left)
                if held:
                    break
                if held is not None:
                    record = self.observation.record
                    return f"held by {record.holder!r} now" if record is not None and record.holder else "deleted"
                await self._sleep(min(self.timings.retry_period, max(0.0, deadline - loop.time())))

    async def _attempt(self, *, timeout: Optional[float]) -> Optional[bool]:
        """One try to acquire or renew: held or not; ``None`` if it failed (said once, retried)."""
        now = asyncio.get_running_loop().time()
        attempt = leases.try_acquire_or_renew(
            self.client, self.ref, identity=self.identity, observation=self.observation,
            timings=self.timings, now=now, moment=_wall_now())
        try:
            held = await aiowaiting.run_within(attempt, timeout)
        except (Exception, asyncio.TimeoutError) as e:  # 403, 5xx, the network: never fatal
            self.troubles.report(e)
            return None
        finally:
            self.attempted.set()
        self.troubles.over()
        if held:
            self.renewed_at = now  # when the request was sent: no later than the server's renewTime
        if self.observation.record is not None:
            self._notice_oddities(self.observation.record)
        return held

    async def _sleep(self, delay: float) -> None:
        """Sleep, but wake up at once if the watch-stream says the Lease needs attention."""
        await aiowaiting.wait_event(self.wakeup, delay)

    async def _watch(self) -> None:
        """Follow the Lease's changes (if permitted), so that the candidates need not poll."""
        await self.attempted.wait()
        await leasewatching.follow(
            self.client, namespace=self.ref.namespace, what=f"the Lease {self.ref}",
            retry_period=self.timings.retry_period, field_selector=f'metadata.name={self.ref.name}',
            on_event=self._on_event, on_watching=self._on_watching, quiet=lambda: self.troubles.said is not None)

    def _on_event(self, kind: str, body: Mapping[str, Any]) -> None:
        if kind == 'DELETED':
            self.observation.notice(None, now=asyncio.get_running_loop().time())
            self.wakeup.set()
        else:
            self.observe(body)

    def _on_watching(self, watching: bool) -> None:
        self.watched = watching

    def _notice_oddities(self, record: leases.LeaseRecord) -> None:
        """A Lease edited into nonsense: each oddity said once while it lasts (and again if it comes back)."""
        if not record.holder or record.holder == self.identity:
            self.oddities.clear()  # ours or free: whatever comes next is said anew
            return
        duration = leases.effective_duration(record, self.timings)
        if record.duration is None or record.duration <= 0:
            self._say_once('duration', (record.holder, record.duration),
                           f"The Lease {self.ref} held by {record.holder!r} has no valid leaseDurationSeconds "
                           f"({record.duration!r}): it is judged by ours, {duration:g}s since it last changed.")
        elif duration < record.duration:
            self._say_once('duration', (record.holder, record.duration),
                           f"The Lease {self.ref} held by {record.holder!r} asks for leaseDurationSeconds="
                           f"{record.duration}, more than {leases.MAX_DURATION_FACTOR} times this replica's lease "
                           f"duration: it is judged by {duration:g}s since it last changed (set the same "
                           f"settings.leader_election timings on all replicas; only the operator's service "
                           f"account should write the Leases in {self.ref.namespace!r}).")
        else:
            self.oddities.pop('duration', None)
        renewed = leases.parse_micro_time(record.renew_time)
        if renewed is not None and renewed > _wall_now() + datetime.timedelta(seconds=duration):
            self._say_once('future', record.holder,
                           f"The Lease {self.ref} held by {record.holder!r} has a renewTime in the future "
                           f"({record.renew_time}): the time in the Lease is ignored; it expires "
                           f"{duration:g}s after it last changed.")
        else:
            self.oddities.pop('future', None)

    def _say_once(self, kind: str, state: Any, message: str) -> None:
        if self.oddities.get(kind) != state:
            self.oddities[kind] = state
            logger.warning(message)


def _wall_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)
