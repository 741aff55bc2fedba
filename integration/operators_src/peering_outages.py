"""
Handlers for the faults of the peering: an API outage while in the peering mode.

The client's retries are made short and the keep-alives frequent (startup
handler), so that an outage of some seconds outlasts the retries of several
keep-alives in a row.
"""
from typing import Any

import kopf


@kopf.on.startup()
def short_retries_and_keepalives(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.networking.error_backoffs = [0.2, 0.2]
    settings.peering.lifetime = 12  # a keep-alive every 2..7 seconds


@kopf.on.create('kopfexamples.kopf.dev')
def example_fn(logger: Any, name: str, **_: Any) -> dict[str, str]:
    logger.info(f"example_fn handled {name}")
    return {'handled': name}
