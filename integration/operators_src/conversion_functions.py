"""
Conversion functions for the tests: two CRDs of one group, each with the versions v1 and v2.

v1 keeps one ``spec.item``; v2 keeps a list ``spec.items``. The objects of
``storedinv1s`` are stored in v1, those of ``storedinv2s`` in v2, so each
direction of the conversion is needed by one of them. An item ``explode``
has no v2 form: its conversion fails with a message for ``kubectl`` to show.

The server listens on 127.0.0.1 with a self-signed certificate; the CRDs'
conversion is managed under the name ``$CONVERSION_MANAGED``.
"""
import os
from typing import Any

import kopf

GROUP = 'conversion.kopf.dev'
PLURALS = ['storedinv1s', 'storedinv2s']


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.admission.server = kopf.WebhookServer(addr='127.0.0.1', host='127.0.0.1')
    settings.admission.managed = os.environ['CONVERSION_MANAGED']


def v1_to_v2(body: kopf.Body, name: str, logger: kopf.Logger, **_: Any) -> dict[str, Any]:
    item = body.spec.get('item')
    if item == 'explode':
        raise kopf.PermanentError(f"{name} cannot be converted to v2: the item 'explode' has no v2 form.")
    logger.info(f"converting to v2: {item!r}")
    return {'metadata': dict(body.metadata), 'spec': {'items': [item]}}


def v2_to_v1(body: kopf.Body, logger: kopf.Logger, **_: Any) -> dict[str, Any]:
    items = body.spec.get('items') or [None]
    logger.info(f"converting to v1: {items!r}")
    return {'metadata': dict(body.metadata), 'spec': {'item': items[0]}}


for plural in PLURALS:
    kopf.on.convert(GROUP, plural, source='v1', target='v2', id=f'{plural}-v1-to-v2')(v1_to_v2)
    kopf.on.convert(GROUP, plural, source='v2', target='v1', id=f'{plural}-v2-to-v1')(v2_to_v1)
