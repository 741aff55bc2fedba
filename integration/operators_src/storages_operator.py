"""
One operator for all the persistence storages: chosen at startup by environment variables.

``$STORAGES_PLURAL``: the resource to handle. ``$STORAGES_PROGRESS``:
annotations, status, multi, smart (the default), custom. ``$STORAGES_DIFFBASE``:
annotations (the default), status, multi, custom. The storages are configured
as the manual's "Configuration" shows them; the custom ones are subclasses of
the public base classes that keep everything in one annotation each.

The creation handler ``gated_fn`` fails temporarily (for 3 seconds) until the
object has the label ``go=yes``, so that the tests can read the progress stored
mid-way; it and
``create_fn`` log their invocations, so that the tests can tell if anything
finished is run again. ``update_fn`` logs the old and new values it is given:
they come from the diff-base storage.
"""
import copy
import json
import os
from collections.abc import Mapping
from typing import Any, Optional

import kopf

PLURAL = os.environ['STORAGES_PLURAL']
PROGRESS = os.environ.get('STORAGES_PROGRESS', 'smart')
DIFFBASE = os.environ.get('STORAGES_DIFFBASE', 'annotations')

CUSTOM_PROGRESS_KEY = 'storages.kopf.dev/progress'
CUSTOM_DIFFBASE_KEY = 'storages.kopf.dev/essence'


def _without_annotation(essence: Any, key: str) -> Any:
    essence = copy.deepcopy(essence)
    annotations = essence.get('metadata', {}).get('annotations', {})
    annotations.pop(key, None)
    return essence


class OneAnnotationProgressStorage(kopf.ProgressStorage):
    """All handlers' records in one annotation: a JSON object keyed by the handler ids."""

    def _records(self, body: kopf.Body, patch: Optional[kopf.Patch] = None) -> dict[str, Any]:
        # Several handlers store their records in one cycle: the patch has the latest value then.
        if patch is not None and patch.meta.annotations.get(CUSTOM_PROGRESS_KEY) is not None:
            raw = patch.meta.annotations[CUSTOM_PROGRESS_KEY]
        else:
            raw = body.metadata.annotations.get(CUSTOM_PROGRESS_KEY)
        return json.loads(raw) if raw else {}

    def fetch(self, *, key: str, body: kopf.Body) -> Any:
        return self._records(body).get(key)

    def store(self, *, key: str, record: Any, body: kopf.Body, patch: kopf.Patch) -> None:
        records = self._records(body, patch)
        records[key] = dict(record)
        patch.meta.annotations[CUSTOM_PROGRESS_KEY] = json.dumps(records, sort_keys=True)

    def purge(self, *, key: str, body: kopf.Body, patch: kopf.Patch) -> None:
        records = self._records(body, patch)
        if key in records:
            del records[key]
            patch.meta.annotations[CUSTOM_PROGRESS_KEY] = json.dumps(records, sort_keys=True) if records else None

    def clear(self, *, essence: Any) -> Any:
        # Our own annotation is not the users' data: it must not be seen as a change,
        # nor leave an empty stanza behind, which would be stored in the diff-base.
        essence = super().clear(essence=_without_annotation(essence, CUSTOM_PROGRESS_KEY))
        self.remove_empty_stanzas(essence)
        return essence


class OneAnnotationDiffBaseStorage(kopf.DiffBaseStorage):
    """The essence in one annotation, as JSON with sorted keys."""

    def fetch(self, *, body: kopf.Body) -> Any:
        raw = body.metadata.annotations.get(CUSTOM_DIFFBASE_KEY)
        return self.clear(essence=json.loads(raw)) if raw else None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: Any) -> None:
        patch.meta.annotations[CUSTOM_DIFFBASE_KEY] = json.dumps(essence, sort_keys=True)

    def clear(self, *, essence: Any) -> Any:
        return super().clear(essence=_without_annotation(essence, CUSTOM_DIFFBASE_KEY))


def progress_storage(name: str) -> kopf.ProgressStorage:
    if name == 'annotations':
        return kopf.AnnotationsProgressStorage()
    if name == 'status':
        return kopf.StatusProgressStorage()
    if name == 'multi':
        return kopf.MultiProgressStorage([
            kopf.AnnotationsProgressStorage(prefix='my-op.example.com'),
            kopf.StatusProgressStorage(field='status.my-operator'),
        ])
    if name == 'smart':
        return kopf.SmartProgressStorage()
    if name == 'custom':
        return OneAnnotationProgressStorage()
    raise ValueError(f"Unknown progress storage: {name!r}")


def diffbase_storage(name: str) -> kopf.DiffBaseStorage:
    if name == 'annotations':
        return kopf.AnnotationsDiffBaseStorage(prefix='kopf.zalando.org', key='last-handled-configuration')
    if name == 'status':
        return kopf.StatusDiffBaseStorage()
    if name == 'multi':
        return kopf.MultiDiffBaseStorage([
            kopf.StatusDiffBaseStorage(field='status.diff-base'),
            kopf.AnnotationsDiffBaseStorage(prefix='kopf.zalando.org', key='last-handled-configuration'),
        ])
    if name == 'custom':
        return OneAnnotationDiffBaseStorage()
    raise ValueError(f"Unknown diff-base storage: {name!r}")


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, logger: Any, **_: Any) -> None:
    settings.persistence.progress_storage = progress_storage(PROGRESS)
    settings.persistence.diffbase_storage = diffbase_storage(DIFFBASE)
    logger.info(f"Storages: progress={PROGRESS}, diff-base={DIFFBASE}")


@kopf.on.create(PLURAL)
def create_fn(logger: Any, retry: int, **_: Any) -> dict[str, str]:
    logger.info(f"create_fn is called with retry={retry}")
    return {'message': 'created'}


@kopf.on.create(PLURAL)
def gated_fn(logger: Any, retry: int, labels: Mapping[str, str], **_: Any) -> dict[str, int]:
    logger.info(f"gated_fn is called with retry={retry}")
    if labels.get('go') != 'yes':
        # A new change does not make a delayed handler run earlier: the delay is kept short, but
        # long enough for the tests to read the progress stored mid-way and to label the object.
        raise kopf.TemporaryError("waiting for the go label", delay=3)
    return {'retry': retry}


@kopf.on.update(PLURAL, field='spec.field')
def update_fn(logger: Any, old: Any, new: Any, **_: Any) -> dict[str, Any]:
    logger.info(f"update_fn is called with old={old!r}, new={new!r}")
    return {'old': old, 'new': new}
