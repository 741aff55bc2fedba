"""
Filters: which objects and which changes a handler is for.

A handler runs only for the objects that pass all its filters; the framework
does not even invoke it for the others (no progress is stored for them).

- ``labels=``/``annotations=``: exact values, ``kopf.PRESENT``/``kopf.ABSENT``,
  or a callable that checks the value (with the handler's kwargs too).
- ``when=``: any callable of the handler's kwargs (``spec``, ``body``, ...).
- ``field=`` with ``value=``, or ``old=``/``new=`` on updates: a field and its
  value(s); the handler gets that field's ``old``/``new`` values.
"""
from typing import Any, Optional

import kopf


def is_big(spec: kopf.Spec, **_: Any) -> bool:
    return bool(spec.get('size', 0) > 10)


def is_staging(value: Optional[str], **_: Any) -> bool:
    return value is not None and value.startswith('stag')  # None: the label is absent


@kopf.on.create('kopfexamples', labels={'env': 'prod'})
def production(name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"{name} is in production.")


@kopf.on.create('kopfexamples', labels={'team': kopf.PRESENT}, annotations={'kopf.dev/skip': kopf.ABSENT})
def owned(labels: kopf.Labels, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Owned by the team {labels['team']}.")


@kopf.on.create('kopfexamples', labels={'env': is_staging})
def staging(name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"{name} is in staging.")


@kopf.on.create('kopfexamples', when=is_big)
def big(spec: kopf.Spec, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"A big one: {spec['size']}.")


@kopf.on.update('kopfexamples', field='spec.state', new='ready')
def became_ready(old: Any, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Ready now (was {old!r}).")


@kopf.on.delete('kopfexamples', labels={'env': 'prod'})
def production_deleted(name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"{name} leaves production.")  # the others get no finalizer at all
