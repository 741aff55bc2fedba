"""
Kubernetes events about the objects: what ``kubectl describe`` shows to users.

``kopf.info()``, ``kopf.warn()`` and ``kopf.exception()`` post ``Normal``,
``Warning`` and ``Error`` events about any object (the handled one, or any dict
with ``apiVersion``, ``kind`` and ``metadata``); ``kopf.event()`` posts any type.
They are posted in the background: the calls never block the handler.
With ``settings.posting.loggers = True``, the handlers' log messages become
events too (off by default: one API request per message).
"""
from typing import Any

import kopf


@kopf.on.create('kopfexamples')
def create_fn(body: kopf.Body, spec: kopf.Spec, **_: Any) -> None:
    kopf.info(body, reason='Greeting', message='Hello from the operator.')
    if 'duration' not in spec:
        kopf.warn(body, reason='NoDuration', message='No spec.duration: it runs forever.')
    try:
        int(spec.get('field', ''))
    except ValueError:
        # The exception's text is appended to the message; the handler itself goes on.
        kopf.exception(body, reason='NotANumber', message='spec.field is not a number:')


@kopf.on.update('kopfexamples')
def update_fn(body: kopf.Body, diff: kopf.Diff, **_: Any) -> None:
    fields = ', '.join('.'.join(map(str, field)) for _, field, _, _ in diff)
    kopf.event(body, type='Normal', reason='Changed', message=f'Changed: {fields}.')
