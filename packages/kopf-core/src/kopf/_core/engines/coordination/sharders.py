"""
Automatic sharding: one replica's rounds — renew, survey, let go, claim, verify, start.

Every ``retry_period``, the :class:`Sharder` of a replica lists the group's
Leases (see :mod:`membership`), computes its own slots from the live members
(see :mod:`sharding`), and then:

1. **lets go** of the slots served here that are not its own anymore: it stops
   them first (``apply`` returns when their watch-streams, workers and daemons
   have stopped) and only then publishes that it does not serve them;
2. **claims** its own slots that no live member claims: it publishes the claim
   first, lists the Leases again, withdraws the claims that another member
   made meanwhile (two claimants both withdraw; the next round decides), and
   starts the rest. As each claimant writes before it reads (and the API server
   is linearizable), of two simultaneous claimants at most one sees no rival.

So no slot is served by two replicas: a replica starts a slot only when no
live Lease claims it — its previous owner has published that it let go of it,
or its Lease has expired (it has stopped serving at its renew deadline, well
before). A replica that cannot renew its Lease within the renew deadline
stops serving everything, as a leader steps down.

The renewals go on in a task of their own, so that a slow stop (e.g. daemons
that take their time) never lets the Lease expire while the slots are still
served.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import math
from typing import Awaitable, Callable, List, Optional, Tuple

from kopf._cogs.aiokits import aiowaiting
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import scheduling
from kopf._core.engines.coordination import leases, membership, sharding

logger = logging.getLogger('kopf.engines.sharders')

Applier = Callable[[sharding.Slots], Awaitable[None]]

# After a Lease's expiry, how long the round waits to see it expired (the loop's timers may fire a bit early).
EXPIRY_MARGIN = 0.01

# The rounds woken by the others' changes come at least this share of a retry period apart.
WOKEN_ROUNDS_SPACING = 0.25


class _Troubles:
    """The failures to use the Leases: each kind said once (then at DEBUG), the recovery said once."""

    def __init__(self, member: membership.Member) -> None:
        self.member = member
        self.said: Optional[Tuple[type, Optional[int]]] = None

    def report(self, error: BaseException) -> None:
        kind = (type(error), getattr(error, 'status', None))
        level = logging.DEBUG if kind == self.said else logging.ERROR
        self.said = kind
        ref, timings = self.member.ref, self.member.timings
        retrying = f"retrying every {timings.retry_period:g}s"
        if isinstance(error, apierrors.APIForbiddenError):
            logger.log(level, f"Not permitted to use the sharding's Leases in {ref.namespace!r} ({error}). Grant "
                              f"the operator get, list, watch, create, patch and delete on the leases of "
                              f"coordination.k8s.io in {ref.namespace!r}; {retrying}.")
        elif isinstance(error, apierrors.APIClientError) and error.status == 422:
            logger.log(level, f"Kubernetes refuses the sharding's Lease {ref} ({error}): set a valid "
                              f"settings.sharding.lease_prefix; {retrying}.")
        else:
            logger.log(level, f"Failed to read or write the sharding's Leases in {ref.namespace!r}; "
                              f"{retrying}. The error: {error!r}")

    def over(self) -> None:
        if self.said is not None:
            logger.info(f"The sharding's Leases in {self.member.ref.namespace!r} are usable again.")
            self.said = None


class Sharder:
    """
    The slots of one replica: which it serves (``serving``), which it claims in its Lease (``claims``).

    ``claims`` is always a superset of ``serving`` (of what ``apply`` was last given).
    """

    def __init__(self, *, member: membership.Member, apply: Applier) -> None:
        self.member = member
        self.timings: leases.LeaseTimings = member.timings
        self.apply = apply
        self.serving: sharding.Slots = frozenset()
        self.claims: sharding.Slots = frozenset()
        self.renewed_at: Optional[float] = None  # loop time of the last renewal's request
        self.lock = asyncio.Lock()  # one write of our Lease at a time (each is based on the previous one)
        self.serving_lock = asyncio.Lock()  # one change of the served slots at a time (rounds, stepping down)
        self.wakeup = asyncio.Event()
        self.troubles = _Troubles(member)

    async def run(self) -> None:
        """Renew and take rounds until cancelled (then the caller stops serving and calls :meth:`leave`)."""
        # The Leases' requests go before the objects' ones waiting in the client (e.g. of a burst of
        # new objects): a renewal that waits behind them would expire the Lease under load.
        scheduling.request_priority.set(-math.inf)
        await self._publish()  # join (or say why not) before the first round
        heartbeat = asyncio.create_task(self._heartbeat(), name=f'renewal of the Lease {self.member.ref}')
        follower = asyncio.create_task(self.member.follow(self.wakeup), name=f'watcher of {self.member.prefix}')
        try:
            while True:
                self.wakeup.clear()
                await self._round()
                ended = asyncio.get_running_loop().time()
                if await aiowaiting.wait_event(self.wakeup, self._until_next_round()):
                    # Woken by a member that came or went: soon, but not in a tight loop of rounds.
                    spacing = self.timings.retry_period * WOKEN_ROUNDS_SPACING
                    await asyncio.sleep(max(0.0, ended + spacing - asyncio.get_running_loop().time()))
        finally:
            heartbeat.cancel()
            follower.cancel()
            await asyncio.wait([heartbeat, follower])

    def _until_next_round(self) -> float:
        """A retry period, or less if a member's Lease expires sooner: its slots are taken over then."""
        now = asyncio.get_running_loop().time()
        expiry = self.member.next_expiry(now=now)
        delay = self.timings.retry_period if expiry is None else min(self.timings.retry_period, expiry - now)
        return max(0.0, delay) + EXPIRY_MARGIN

    async def leave(self) -> None:
        """At the exit, once nothing is served anymore: delete our Lease for the others to take over at once."""
        async with self.lock:
            try:  # the exit goes on if the API server does not answer: the Lease expires by itself
                await aiowaiting.run_within(self.member.leave(), timeout=self.timings.retry_period)
            except asyncio.TimeoutError:
                logger.warning(f"Failed to delete the sharding's Lease {self.member.ref} in time; it expires by "
                               f"itself in {self.timings.lease_duration:g}s.")

    def renewed(self) -> bool:
        """Whether our Lease was renewed within the renew deadline (else we must not serve anything)."""
        now = asyncio.get_running_loop().time()
        return self.renewed_at is not None and now - self.renewed_at < self.timings.renew_deadline

    async def _heartbeat(self) -> None:
        pause = asyncio.Event()  # never set: a sleep that the tests' fake time also cancels at once
        while True:
            await aiowaiting.wait_event(pause, self.timings.retry_period)
            await self._publish()
            if self.serving and not self.renewed():
                await self._step_down()

    async def _publish(self) -> bool:
        """Write the current claims into our Lease (which renews it); whether it was written."""
        async with self.lock:
            now = asyncio.get_running_loop().time()
            claims = self.claims
            moment = datetime.datetime.now(datetime.timezone.utc)
            try:
                publishing = self.member.publish(claims, now=now, moment=moment)
                await aiowaiting.run_within(publishing, timeout=self._patience())
            except (Exception, asyncio.TimeoutError) as e:  # 403, 5xx, the network: never fatal
                self.troubles.report(e)
                return False
            self.troubles.over()
            self.renewed_at = now  # when the request was sent: no later than the server's renewTime
            return True

    async def _step_down(self) -> None:
        """Not renewed within the renew deadline: stop serving before the Lease can expire for the others."""
        async with self.serving_lock:
            if self.serving and not self.renewed():
                logger.warning(f"The sharding's Lease {self.member.ref} is not renewed within the renew deadline "
                               f"of {self.timings.renew_deadline:g}s: stopping serving all slots.")
                await self._serve(frozenset())

    def _patience(self) -> float:
        """How long a request may take: until the renew deadline (a slow API server is not a dead one)."""
        now = asyncio.get_running_loop().time()
        left = self.timings.renew_deadline - (now - self.renewed_at) if self.renewed_at is not None else 0
        return max(self.timings.retry_period, left)

    async def _survey(self) -> Optional[List[sharding.Peer]]:
        now = asyncio.get_running_loop().time()
        try:
            return await aiowaiting.run_within(self.member.survey(now=now), timeout=self._patience())
        except (Exception, asyncio.TimeoutError) as e:
            self.troubles.report(e)
            return None

    async def _round(self) -> None:
        if not self.renewed():
            return  # the heartbeat steps down (if serving) and says why
        peers = await self._survey()
        if peers is None:
            return
        plan = sharding.plan(me=self.member.name, peers=peers, serving=self.serving)
        self.member.judge.notice_overclaims(peers, plan.shares, now=asyncio.get_running_loop().time())
        self.claims = self.serving | (self.claims & plan.mine)  # pending claims of slots not ours: dropped
        if plan.release:
            async with self.serving_lock:
                await self._serve(self.serving - plan.release)
            await self._publish()  # let go; if it fails, the heartbeat says it later (nobody takes them meanwhile)
        if plan.claim:
            await self._claim(plan.claim)

    async def _claim(self, wanted: sharding.Slots) -> None:
        """Claim, verify (no rival claimed meanwhile), and start the slots that are ours alone."""
        self.claims = self.claims | wanted
        if not await self._publish():
            return
        peers = await self._survey()
        if peers is None:
            return  # the claims stay: verified in the next round
        rivals = wanted & sharding.claimed(peers)
        if rivals:
            logger.debug(f"Slots {sharding.format_slots(rivals)} are claimed by another member too: withdrawn.")
            self.claims = self.claims - rivals
            await self._publish()
        gained = wanted - rivals
        async with self.serving_lock:
            if gained and self.renewed():
                await self._serve(self.serving | gained)

    async def _serve(self, slots: sharding.Slots) -> None:
        gained, lost = slots - self.serving, self.serving - slots
        if lost:
            self.serving = slots  # as soon as it starts stopping: never claimed as free meanwhile
            await self.apply(slots)
            self.claims = self.claims - lost
        if gained:
            await self.apply(slots)
            self.serving = slots
        logger.info(f"Serving the slots {sharding.format_slots(slots) or 'none'} of {sharding.SLOTS} "
                    f"(started: {sharding.format_slots(gained) or 'none'}; "
                    f"stopped: {sharding.format_slots(lost) or 'none'}).")
