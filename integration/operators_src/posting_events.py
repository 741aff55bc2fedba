"""
An operator whose create handler logs a message and posts an explicit k8s-event.

``$TEST_POSTING_LOGGERS=true`` turns the posting of per-object log messages on
(``settings.posting.loggers``); unset, the setting keeps its default (off).
``$TEST_POSTING_COMPONENT``, ``$TEST_POSTING_INSTANCE`` and ``$TEST_POSTING_PREFIX``
set the events' reporting component, instance, and name prefix.
"""
import os
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    if 'TEST_POSTING_LOGGERS' in os.environ:
        settings.posting.loggers = os.environ['TEST_POSTING_LOGGERS'] == 'true'
    settings.posting.reporting_component = os.environ.get('TEST_POSTING_COMPONENT', 'kopf')
    settings.posting.reporting_instance = os.environ.get('TEST_POSTING_INSTANCE', 'dev')
    settings.posting.event_name_prefix = os.environ.get('TEST_POSTING_PREFIX', 'kopf-event-')


@kopf.on.create('kopfexamples')
def create_fn(body: kopf.Body, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("A message from the handler.")
    kopf.info(body, reason='Explicit', message="An explicit event.")
