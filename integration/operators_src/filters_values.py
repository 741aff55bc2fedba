"""
Creation handlers on ``filterobjs.filters.kopf.dev``, one per kind of filter.

Each handler returns ``True``, so ``status.<handler id>`` shows which of them
have run for an object, and which have not.
"""
from typing import Any, Optional

import kopf

GROUP = 'filters.kopf.dev'
PLURAL = 'filterobjs'


def is_big(value: Optional[str], /, **_: Any) -> bool:
    # An absent label comes as None: it is not big.
    return value is not None and value.startswith('big')


def has_many(spec: kopf.Spec, **_: Any) -> bool:
    return int(spec.get('count', 0)) > 5


def is_named_full(name: str, **_: Any) -> bool:
    return name.startswith('full')


@kopf.on.create(GROUP, PLURAL, labels={'color': 'red'})
def label_value(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, labels={'color': kopf.PRESENT})
def label_present(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, labels={'color': kopf.ABSENT})
def label_absent(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, labels={'size': is_big})
def label_callback(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, annotations={'note': 'yes'})
def annotation_value(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, annotations={'note': kopf.PRESENT})
def annotation_present(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, annotations={'note': kopf.ABSENT})
def annotation_absent(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, when=has_many)
def when_callback(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, when=kopf.all_([has_many, is_named_full]))
def when_all(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, when=kopf.not_(has_many), labels={'color': 'red'})
def when_not_and_label(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, field='spec.mode', value='fast')
def field_value(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, field='spec.mode')
def field_present(**_: Any) -> bool:
    return True


@kopf.on.create(GROUP, PLURAL, field='spec.mode', value=kopf.ABSENT)
def field_absent(**_: Any) -> bool:
    return True
