"""
An operator that watches with Kopf 1.45's watching settings, as chosen by environment variables.

``$PARITY_LABEL_SELECTOR``, ``$PARITY_FIELD_SELECTOR``, ``$PARITY_SHARD_SELECTOR`` go to
``settings.watching.label_selectors`` / ``field_selectors`` / ``shard_selectors`` for
kopfexamples; ``$PARITY_CHUNK_SIZE`` to ``chunk_size``; ``$PARITY_INITIAL_STREAMING=true``
turns ``initial_streaming`` on; ``$PARITY_INACTIVITY_TIMEOUT`` sets ``inactivity_timeout``
(which the operator logs at its start either way). Each object is handled once by the
create handler ("Handled <name>."), and each event is logged with its type.
"""
import os
from typing import Any, Optional

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, logger: kopf.Logger, **_: Any) -> None:
    if 'PARITY_LABEL_SELECTOR' in os.environ:
        settings.watching.label_selectors['kopfexamples'] = os.environ['PARITY_LABEL_SELECTOR']
    if 'PARITY_FIELD_SELECTOR' in os.environ:
        settings.watching.field_selectors['kopf.dev', 'v1', 'kopfexamples'] = os.environ['PARITY_FIELD_SELECTOR']
    if 'PARITY_SHARD_SELECTOR' in os.environ:
        settings.watching.shard_selectors['kopfexamples'] = os.environ['PARITY_SHARD_SELECTOR']
    if 'PARITY_CHUNK_SIZE' in os.environ:
        settings.watching.chunk_size = int(os.environ['PARITY_CHUNK_SIZE'])
    settings.watching.initial_streaming = os.environ.get('PARITY_INITIAL_STREAMING') == 'true'
    if 'PARITY_INACTIVITY_TIMEOUT' in os.environ:
        settings.watching.inactivity_timeout = float(os.environ['PARITY_INACTIVITY_TIMEOUT'])
    logger.info(f"Watching inactivity timeout: {settings.watching.inactivity_timeout!r}.")


@kopf.on.event('kopfexamples')
def event_fn(type: Optional[str], name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Event {type} for {name}.")


@kopf.on.create('kopfexamples')
def create_fn(name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Handled {name}.")
