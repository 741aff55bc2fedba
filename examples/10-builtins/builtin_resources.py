"""
Built-in resources: the same handlers for Kubernetes' own kinds as for custom ones.

Resources are named as kubectl names them: ``'configmaps'``, ``'pods'``,
``'deployments'`` (or with their group and version: ``'apps', 'v1', 'deployments'``).
Only the objects labelled ``kopf.dev/example=builtins`` are handled here: every
namespace has ConfigMaps of its own (``kube-root-ca.crt``) that are not ours.

ConfigMaps have no status: the framework keeps its progress in annotations, and
the handlers return nothing (there is no status to store a result in).
"""
from typing import Any

import kopf

OURS = {'kopf.dev/example': 'builtins'}


def describe_keys(data: Any, patch: kopf.Patch) -> None:
    patch.metadata.annotations['kopf.dev/keys'] = ','.join(sorted(data or {}))


@kopf.on.create('configmaps', labels=OURS)
def configmap_created(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    describe_keys(body.get('data'), patch)


@kopf.on.update('configmaps', field='data', labels=OURS)
def configmap_changed(new: Any, patch: kopf.Patch, **_: Any) -> None:
    describe_keys(new, patch)


@kopf.on.delete('configmaps', labels=OURS)
def configmap_deleted(name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"The ConfigMap {name} is released.")


@kopf.on.create('pods', labels=OURS)
def pod_created(spec: kopf.Spec, logger: kopf.ObjectLogger, **_: Any) -> None:
    images = [container['image'] for container in spec.get('containers', [])]
    logger.info(f"A pod with the images {images}.")
