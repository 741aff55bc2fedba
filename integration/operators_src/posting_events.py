"""
An operator whose create handler logs a message and posts an explicit k8s-event.

``$TEST_POSTING_LOGGERS=false`` turns the posting of per-object log messages off
(``settings.posting.loggers``): then only the explicit event is posted.
"""
import os
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.loggers = os.environ.get('TEST_POSTING_LOGGERS', 'true') == 'true'


@kopf.on.create('kopfexamples')
def create_fn(body: kopf.Body, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("A message from the handler.")
    kopf.info(body, reason='Explicit', message="An explicit event.")
