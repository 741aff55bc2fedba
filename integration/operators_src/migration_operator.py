"""
An operator for both upstream Kopf and ours: the same file is run by either.

It uses only the API common to both. Each handler logs its invocations (with
the ``retry`` kwarg, or the old & new values), and the creation handlers also
count their successful calls in their results in the status, so that the tests
can see, across both frameworks' processes, that nothing finished is re-run.

``create_pending`` fails temporarily on the objects labelled ``hold=yes``
unless ``$MIGRATION_RELEASE`` is ``1``: so one framework leaves it half-done,
and the other one continues it.
"""
import os
from collections.abc import Mapping
from typing import Any

import kopf

PLURAL = 'migrationobjs.migration.kopf.dev'
RELEASE = os.environ.get('MIGRATION_RELEASE') == '1'


@kopf.on.create(PLURAL)
def create_done(logger: Any, status: Mapping[str, Any], **_: Any) -> dict[str, int]:
    logger.info("create_done is called")
    return {'calls': status.get('create_done', {}).get('calls', 0) + 1}


@kopf.on.create(PLURAL)
def create_pending(logger: Any, retry: int, labels: Mapping[str, str], **_: Any) -> dict[str, int]:
    logger.info(f"create_pending is called with retry={retry}")
    if labels.get('hold') == 'yes' and not RELEASE:
        raise kopf.TemporaryError("on hold", delay=1)
    return {'retry': retry}


@kopf.on.update(PLURAL, field='spec.field')
def update_fn(logger: Any, old: Any, new: Any, **_: Any) -> dict[str, Any]:
    logger.info(f"update_fn is called with old={old!r}, new={new!r}")
    return {'old': old, 'new': new}


@kopf.on.delete(PLURAL)
def delete_fn(logger: Any, **_: Any) -> None:
    logger.info("delete_fn is called")
