"""
Scaling out: several replicas of one operator, each object handled by one of them.

The handlers are as usual; how the replicas share the work is chosen when the
operator is run:

- ``kopf run scaling.py --leader-election``: the replicas compete for one Lease;
  only its holder handles objects, the others stand by and take over when it
  stops (at once, as it releases the Lease) or dies (when the Lease expires).
- ``kopf run scaling.py --shards=auto``: every replica handles a share of the
  objects (by a hash of their uids); the replicas agree on the split through one
  Lease each, and move as few objects as possible when one joins or leaves.

The Leases are in the served namespace (``-n NAME``), or ``$POD_NAMESPACE`` in a
pod. The timings are shortened here so that the hand-overs are quick to watch.
"""
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    for timings in (settings.leader_election, settings.sharding):
        timings.lease_duration = 6  # seconds before a dead replica's Lease is taken over
        timings.renew_deadline = 4
        timings.retry_period = 1


@kopf.on.create('kopfexamples')
def create_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Created.")


@kopf.on.update('kopfexamples')
def update_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Updated.")


@kopf.on.delete('kopfexamples')
def delete_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Deleted.")
