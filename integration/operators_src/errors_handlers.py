"""
Handlers that fail in every documented way, selected per object by the label ``mode``.

Each handler logs its own invocation with the ``retry`` kwarg and the wall-clock
time, so that the tests can see how many attempts there were, when, and with
which retry counter (e.g. continued from the progress stored before a restart).

``$ERRORS_SUCCEED_FROM`` (an integer, default 3) is the retry from which the
``restarting`` handler succeeds: the tests set it high for the first run of an
operator, so that the handler keeps failing until the operator is stopped.

The log messages are posted as k8s-events (``settings.posting.loggers``), so that
the tests can see the errors in the objects' events too.
"""
import os
import time
from typing import Any

import kopf

PLURAL = 'errorobjs.errors.kopf.dev'
SUCCEED_FROM = int(os.environ.get('ERRORS_SUCCEED_FROM', '3'))


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # The failures are posted as k8s-events too, as the manual shows (not by default since Kopf 1.44).
    settings.posting.loggers = True


def called(logger: Any, name: str, retry: int) -> None:
    logger.info(f"{name} is called with retry={retry} at {time.time():.3f}")


@kopf.on.create(PLURAL, labels={'mode': 'temporary'})
def temporary_fn(logger: Any, retry: int, **_: Any) -> dict[str, int]:
    called(logger, 'temporary_fn', retry)
    if retry < 2:
        raise kopf.TemporaryError("not yet", delay=1)
    return {'retry': retry}


@kopf.on.create(PLURAL, labels={'mode': 'permanent'})
def permanent_fn(logger: Any, retry: int, **_: Any) -> None:
    called(logger, 'permanent_fn', retry)
    raise kopf.PermanentError("never ever")


@kopf.on.create(PLURAL, labels={'mode': 'arbitrary'}, backoff=1)
def arbitrary_fn(logger: Any, retry: int, **_: Any) -> dict[str, int]:
    called(logger, 'arbitrary_fn', retry)
    if retry < 2:
        raise ValueError("boom")
    return {'retry': retry}


@kopf.on.create(PLURAL, labels={'mode': 'retries'}, backoff=1, retries=3)
def retries_fn(logger: Any, retry: int, **_: Any) -> None:
    called(logger, 'retries_fn', retry)
    raise ValueError("boom")


@kopf.on.create(PLURAL, labels={'mode': 'retries-temporary'}, retries=2)
def temporary_retries_fn(logger: Any, retry: int, **_: Any) -> None:
    called(logger, 'temporary_retries_fn', retry)
    raise kopf.TemporaryError("not yet", delay=1)


@kopf.on.create(PLURAL, labels={'mode': 'timeout'}, timeout=2)
def timeout_fn(logger: Any, retry: int, **_: Any) -> None:
    called(logger, 'timeout_fn', retry)
    raise kopf.TemporaryError("not yet", delay=1)


@kopf.on.create(PLURAL, labels={'mode': 'restart'})
def finished_fn(logger: Any, retry: int, **_: Any) -> dict[str, str]:
    called(logger, 'finished_fn', retry)
    return {'message': 'done'}


@kopf.on.create(PLURAL, labels={'mode': 'restart'})
def restarting_fn(logger: Any, retry: int, **_: Any) -> dict[str, int]:
    called(logger, 'restarting_fn', retry)
    if retry < SUCCEED_FROM:
        # Long enough for the test to read the stored progress and stop the operator before
        # the next attempt; short enough not to slow down the restarted operator much.
        raise kopf.TemporaryError("not yet", delay=2)
    return {'retry': retry}
