"""
An operator whose diff-base storage ignores some fields (Kopf 1.45's ``ignored_fields``).

``$IGNORED_STORAGE``: ``annotations`` (the default) or ``status``, the storage
class to use, with ``ignored_fields=['spec.ignored', ('metadata', 'labels', 'noise')]``.
The handlers log their invocations and the diffs they are given.
"""
import os
from typing import Any

import kopf

IGNORED: list[str | tuple[str, ...]] = ['spec.ignored', ('metadata', 'labels', 'noise')]


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    if os.environ.get('IGNORED_STORAGE') == 'status':
        settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage(ignored_fields=IGNORED)
    else:
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(ignored_fields=IGNORED)


@kopf.on.create('kopfexamples')
def create_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("create_fn is called")


@kopf.on.update('kopfexamples')
def update_fn(logger: kopf.ObjectLogger, diff: kopf.Diff, **_: Any) -> None:
    logger.info(f"update_fn is called with {list(diff)!r}")


@kopf.on.field('kopfexamples', field='spec.ignored')
def ignored_field_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("ignored_field_fn is called")
