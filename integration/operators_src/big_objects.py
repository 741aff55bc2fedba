"""
An operator of big objects: each handler call is appended to a file, to be counted exactly.

``$BIG_PLURAL``: the resource to handle. ``$BIG_CALLS``: the file of the calls,
one line per call (``create``, ``update <revision>``, ``delete``).
``$BIG_DIFFBASE``: annotations (the default) or status: the diff-base storage.

The objects' specs are about 1 MiB, so the framework's debug lines with the
whole body would make the log as big: the messages are shortened in the log.
"""
import logging
import os
from typing import Any

import kopf

PLURAL = os.environ['BIG_PLURAL']
CALLS = os.environ['BIG_CALLS']
DIFFBASE = os.environ.get('BIG_DIFFBASE', 'annotations')

_MESSAGE_LIMIT = 2000


class _Shortening(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > _MESSAGE_LIMIT:
            record.msg, record.args = f"{message[:_MESSAGE_LIMIT]}... ({len(message)} chars)", ()
        return True


logging.getLogger('kopf.objects').addFilter(_Shortening())


def _record(line: str) -> None:
    with open(CALLS, 'a', encoding='utf-8') as f:
        f.write(f"{line}\n")


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    if DIFFBASE == 'status':
        settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage()
    elif DIFFBASE != 'annotations':
        raise ValueError(f"Unknown diff-base storage: {DIFFBASE!r}")


@kopf.on.create(PLURAL)
def create_fn(spec: kopf.Spec, **_: Any) -> None:
    _record(f"create {spec.get('revision')}")


@kopf.on.update(PLURAL)
def update_fn(old: Any, new: Any, **_: Any) -> None:
    _record(f"update {old['spec'].get('revision')}->{new['spec'].get('revision')}")


@kopf.on.delete(PLURAL)
def delete_fn(spec: kopf.Spec, **_: Any) -> None:
    _record(f"delete {spec.get('revision')}")
