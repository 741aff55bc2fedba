"""
One resource addressed in every notation of "Resource specification", and two more cases.

- ``widgets.resources.kopf.dev`` (kind ``Widget``, short name ``wdg``, category
  ``kopftests``): each create handler names it differently and records its id
  in the object's status (via its result), so that the test sees which ones ran.
- ``gadgets``: a plural served by two API groups: ambiguous, so not served.
- ``lateones.late.kopf.dev``: its CRD is created after the operator has started.
- ``kopf.EVERYTHING`` with ``$TEST_EVERYTHING=true``: a raw-event handler for all resources.
"""
import os
from typing import Any

import kopf


@kopf.on.create('resources.kopf.dev', 'v1', 'widgets')
def by_group_version_plural(**_: Any) -> str:
    return 'called'


@kopf.on.create('resources.kopf.dev/v1', 'widgets')
def by_apiversion_and_plural(**_: Any) -> str:
    return 'called'


@kopf.on.create('widgets.resources.kopf.dev')
def by_plural_dot_group(**_: Any) -> str:
    return 'called'


@kopf.on.create('widgets')
def by_plural(**_: Any) -> str:
    return 'called'


@kopf.on.create(kind='Widget')
def by_kind(**_: Any) -> str:
    return 'called'


@kopf.on.create('resources.kopf.dev', 'widgets')  # the group's preferred version
def by_group_and_plural(**_: Any) -> str:
    return 'called'


@kopf.on.create('Widget')  # any name positionally: plural, singular, kind, short name
def by_kind_positionally(**_: Any) -> str:
    return 'called'


@kopf.on.create('wdg')
def by_shortname_positionally(**_: Any) -> str:
    return 'called'


@kopf.on.create(singular='widget')
def by_singular(**_: Any) -> str:
    return 'called'


@kopf.on.create(plural='widgets')
def by_plural_keyword(**_: Any) -> str:
    return 'called'


@kopf.on.create(shortcut='wdg')
def by_shortcut(**_: Any) -> str:
    return 'called'


@kopf.on.create(category='kopftests')
def by_category(**_: Any) -> str:
    return 'called'


@kopf.on.event('gadgets')
def ambiguous_fn(**_: Any) -> None:
    raise AssertionError("An ambiguous resource must not be served.")


@kopf.on.create('late.kopf.dev', 'v1', 'lateones')
def late_fn(**_: Any) -> str:
    return 'called'


if os.environ.get('TEST_EVERYTHING') == 'true':
    @kopf.on.event(kopf.EVERYTHING)
    def everything_fn(resource: kopf.Resource, name: str | None, logger: kopf.ObjectLogger, **_: Any) -> None:
        logger.info(f"Seen: {resource.plural}.{resource.group or 'core'}/{name}")
