"""
Peering: operators of one kind see each other, and only the highest-priority one works.

Each operator writes keep-alives into a shared peering object (``KopfPeering``
for namespaced operators, ``ClusterKopfPeering`` for cluster-wide ones). An
operator that sees a live peer of a higher priority pauses: it handles nothing
until that peer is gone. Run two of them with different ``--priority``:
stopping the higher one lets the lower one go on.

The peering's CRDs and object must exist (``examples/peering.yaml`` has the CRDs
and the ``default`` objects); here, the peering is named ``example``, and it is
mandatory: the operator waits for the object rather than running alone.
"""
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.peering.name = 'example'
    settings.peering.mandatory = True  # as --peering=example does
    settings.peering.lifetime = 10  # the keep-alives' lifetime and interval, in seconds


@kopf.on.create('kopfexamples')
def create_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Created, by the operator with the highest priority.")


@kopf.on.update('kopfexamples')
def update_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Updated, by the operator with the highest priority.")


@kopf.on.delete('kopfexamples')
def delete_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Deleted, by the operator with the highest priority.")
