"""
Update handlers of ``spec.field`` (and one of ``spec.nested``) on ``changeobjs.filters.kopf.dev``.

Each handler logs the ``old``, ``new`` and ``diff`` it received as JSON, since
``None`` (an absent value) cannot be stored in a result: in a merge-patch, it
deletes the key.
"""
import json
from typing import Any

import kopf

GROUP = 'filters.kopf.dev'
PLURAL = 'changeobjs'


def report(handler: str, old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger) -> None:
    items = [[str(op), list(field), old_value, new_value] for op, field, old_value, new_value in diff]
    logger.info(f"{handler} got {json.dumps({'old': old, 'new': new, 'diff': items}, sort_keys=True)}")


@kopf.on.update(GROUP, PLURAL, field='spec.field', old='x', new='y')
def edited(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('edited', old, new, diff, logger)


@kopf.on.update(GROUP, PLURAL, field='spec.field', old=kopf.ABSENT, new=kopf.PRESENT)
def added(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('added', old, new, diff, logger)


@kopf.on.update(GROUP, PLURAL, field='spec.field', old=kopf.PRESENT, new=kopf.ABSENT)
def removed(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('removed', old, new, diff, logger)


@kopf.on.update(GROUP, PLURAL, field='spec.field', new='world')
def reached(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('reached', old, new, diff, logger)


@kopf.on.update(GROUP, PLURAL, field='spec.field', old='world')
def left(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('left', old, new, diff, logger)


@kopf.on.update(GROUP, PLURAL, field='spec.field', value='world')
def either(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('either', old, new, diff, logger)


@kopf.on.update(GROUP, PLURAL, field='spec.field', new=lambda value, **_: value is not None and len(value) > 3)
def long(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('long', old, new, diff, logger)


@kopf.on.field(GROUP, PLURAL, field='spec.field')
def anyhow(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('anyhow', old, new, diff, logger)


@kopf.on.field(GROUP, PLURAL, field='spec.nested')
def nested(old: Any, new: Any, diff: kopf.Diff, logger: kopf.ObjectLogger, **_: Any) -> None:
    report('nested', old, new, diff, logger)
