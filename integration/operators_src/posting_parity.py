"""
An operator that posts k8s-events with Kopf 1.45's posting settings, as chosen by environment variables.

``$PARITY_DEFAULT_BACKOFFS`` and ``$PARITY_LOGGING_BACKOFFS`` (JSON lists) set
``settings.posting.default_backoffs`` / ``logging_backoffs``; ``$PARITY_LOGGERS=true``
posts the log messages too; ``$PARITY_WORKER_LIMIT`` and ``$PARITY_IDLE_TIMEOUT`` set
``settings.posting.worker_limit`` / ``idle_timeout``. The create handler posts
``spec.events`` (a number, 1 by default) explicit events ``Explicit-<i>``, each with
the call's ``backoffs=`` taken from ``spec.backoffs`` if there is one.
"""
import json
import os
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    if 'PARITY_DEFAULT_BACKOFFS' in os.environ:
        settings.posting.default_backoffs = json.loads(os.environ['PARITY_DEFAULT_BACKOFFS'])
    if 'PARITY_LOGGING_BACKOFFS' in os.environ:
        settings.posting.logging_backoffs = json.loads(os.environ['PARITY_LOGGING_BACKOFFS'])
    settings.posting.loggers = os.environ.get('PARITY_LOGGERS') == 'true'
    if 'PARITY_WORKER_LIMIT' in os.environ:
        settings.posting.worker_limit = int(os.environ['PARITY_WORKER_LIMIT'])
    if 'PARITY_IDLE_TIMEOUT' in os.environ:
        settings.posting.idle_timeout = float(os.environ['PARITY_IDLE_TIMEOUT'])


@kopf.on.create('kopfexamples')
def create_fn(body: kopf.Body, spec: kopf.Spec, name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Posting for {name}.")
    for i in range(int(spec.get('events', 1))):
        kopf.info(body, reason=f'Explicit-{i}', message=f"Explicit event {i} of {name}.",
                  backoffs=spec.get('backoffs'))
