"""
Application of the accumulated patch to the object in the cluster.

The framework's own changes (progress, results, the diff-base) and the
user's ``patch`` are merged into as few requests as the resource allows:
one merge-patch for the object, one more for the ``status`` subresource if
the resource has it (its main endpoint ignores status changes then), and a
JSON-patch for the transformation functions (``patch.fns``), which need the
freshest body and a ``test`` on ``resourceVersion`` to be safe.
"""
from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Set

from kopf._cogs.aiokits import aiocompleting
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, patches, references


async def apply_patch(
        *,
        client: protocols.ApiClient,
        resource: references.Resource,
        body: bodies.Body,
        patch: patches.Patch,
        logger: typedefs.Logger,
) -> Optional[typedefs.RawBody]:
    """
    Send the patch; return the object's body as the API returned it.

    Returns ``None`` if the object has disappeared meanwhile (nothing to patch).
    The transformation functions that could not be applied due to a conflict
    are left in ``patch.fns`` for the next cycle; everything else is cleared.
    """
    merge = {key: value for key, value in patch.items()}
    status_patch: Optional[Dict[str, Any]] = None
    if 'status' in resource.subresources and 'status' in merge:
        status_patch = {'status': merge.pop('status')}

    try:
        # Once sent, the outcome is seen through to its answer even if the worker is cancelled meanwhile.
        latest = await aiocompleting.complete(_send_merge_patches(
            client=client, resource=resource, body=body, logger=logger, merge=merge, status_patch=status_patch))
    except apierrors.APINotFoundError:
        logger.debug("Patching was skipped: the object does not exist anymore.")
        patch.clear()
        return None
    except apierrors.APIUnprocessableEntityError as e:
        # The same patch would be rejected again and again: retrying it would only loop.
        logger.error(_explain_rejection(e))
        patch.clear()
        return None

    if latest is not None:
        _report_inconsistencies(resource=resource, patch={**merge, **(status_patch or {})},
                                result=latest, logger=logger)
    patch.clear()

    fns = list(patch.fns)
    if fns:
        # If the functions are rejected, the merge-patched version is still the latest one known.
        latest = await _apply_fns(client=client, resource=resource, body=latest or dict(body),
                                  fns=fns, patch=patch, logger=logger) or latest
    return latest


async def _send_merge_patches(
        *,
        client: protocols.ApiClient,
        resource: references.Resource,
        body: bodies.Body,
        logger: typedefs.Logger,
        merge: Dict[str, Any],
        status_patch: Optional[Dict[str, Any]],
) -> Optional[typedefs.RawBody]:
    """The main resource's merge-patch, then the status subresource's; the latest body returned."""
    namespace, name = body.metadata.namespace, _name_of(body)
    latest: Optional[typedefs.RawBody] = None
    if merge:
        if logger.isEnabledFor(logging.DEBUG):  # the patch's repr is costly: only if shown
            logger.debug(f"Merge-patching the resource with: {merge!r}")
        latest = await client.patch_object(resource, namespace=namespace, name=name, patch=merge,
                                           patch_type=protocols.PatchType.MERGE)
    if status_patch:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(f"Merge-patching the status with: {status_patch!r}")
        latest = await client.patch_object(resource, namespace=namespace, name=name, patch=status_patch,
                                           patch_type=protocols.PatchType.MERGE, subresource='status')
    return latest


async def _apply_fns(
        *,
        client: protocols.ApiClient,
        resource: references.Resource,
        body: Mapping[str, Any],
        fns: List[Any],
        patch: patches.Patch,
        logger: typedefs.Logger,
) -> Optional[typedefs.RawBody]:
    namespace = body.get('metadata', {}).get('namespace')
    name = _name_of(body)
    ops = patches.build_json_patch(body=copy.deepcopy(dict(body)), fns=fns)
    patch.fns.clear()
    if not ops:  # the functions changed nothing: no request
        return dict(body)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(f"JSON-patching the resource with: {ops!r}")
    try:
        return await client.patch_object(resource, namespace=namespace, name=name, patch=ops,
                                         patch_type=protocols.PatchType.JSON)
    except (apierrors.APIConflictError, apierrors.APIUnprocessableEntityError):
        # Someone changed the object since it was read: retry the functions on the next cycle.
        patch.fns.extend(fns)
        return None
    except apierrors.APINotFoundError:
        return None


# The resources whose pruned status has been reported: once per process is enough.
_reported_pruning: Set[references.Resource] = set()


def _report_inconsistencies(
        *,
        resource: references.Resource,
        patch: Mapping[str, Any],
        result: Mapping[str, Any],
        logger: typedefs.Logger,
) -> None:
    """Warn if some patched values did not land (e.g. pruned by the CRD's schema)."""
    missing = list(_iter_missing(patch, result, ()))
    if not missing:
        return
    logger.warning(f"Merge-patching finished with inconsistencies: {missing!r}")
    pruned_status = any(path[:1] == ('status',) for _, path, _, _ in missing)
    if pruned_status and resource not in _reported_pruning:
        _reported_pruning.add(resource)
        logger.warning(
            f"The status of {resource!r} is pruned by the API server: the handlers' results "
            f"(and the progress, if stored in the status) are lost. To fix it, add "
            f"`x-kubernetes-preserve-unknown-fields: true` to the status schema in the CRD, "
            f"or store the results elsewhere.")


def _iter_missing(patch: Any, result: Any, path: tuple[str, ...]) -> Any:
    if isinstance(patch, Mapping):
        for key, value in patch.items():
            actual = result.get(key) if isinstance(result, Mapping) else None
            yield from _iter_missing(value, actual, (*path, key))
    elif patch is None:
        if result is not None:
            yield ('remove', path, result, None)
    elif patch != result:
        yield ('change', path, result, patch)


async def add_finalizer(
        *,
        client: protocols.ApiClient,
        resource: references.Resource,
        body: bodies.Body,
        finalizer: str,
        logger: typedefs.Logger,
) -> Optional[typedefs.RawBody]:
    """Append the finalizer with a JSON-patch guarded by the resourceVersion."""
    finalizers = list(body.metadata.get('finalizers', []))
    if finalizer in finalizers:
        return None
    ops: List[Dict[str, Any]] = [_rv_test(body)]
    if 'finalizers' in body.metadata:
        ops.append({'op': 'add', 'path': '/metadata/finalizers/-', 'value': finalizer})
    else:
        ops.append({'op': 'add', 'path': '/metadata/finalizers', 'value': [finalizer]})
    return await _json_patch_meta(client=client, resource=resource, body=body, ops=ops, logger=logger)


async def remove_finalizer(
        *,
        client: protocols.ApiClient,
        resource: references.Resource,
        body: bodies.Body,
        finalizer: str,
        logger: typedefs.Logger,
) -> Optional[typedefs.RawBody]:
    """Remove all copies of the finalizer with a JSON-patch guarded by the resourceVersion."""
    finalizers = list(body.metadata.get('finalizers', []))
    indexes = [index for index, value in enumerate(finalizers) if value == finalizer]
    if not indexes:
        return None
    ops: List[Dict[str, Any]] = [_rv_test(body)]
    ops.extend({'op': 'remove', 'path': f'/metadata/finalizers/{index}'} for index in reversed(indexes))
    return await _json_patch_meta(client=client, resource=resource, body=body, ops=ops, logger=logger)


def _name_of(body: Mapping[str, Any]) -> str:
    name = body.get('metadata', {}).get('name')
    if not name:
        raise ValueError(f"Only named objects can be patched; got one with no name: {body!r}")
    return str(name)


def _rv_test(body: bodies.Body) -> Dict[str, Any]:
    return {'op': 'test', 'path': '/metadata/resourceVersion', 'value': body.metadata.get('resourceVersion')}


async def _json_patch_meta(
        *,
        client: protocols.ApiClient,
        resource: references.Resource,
        body: bodies.Body,
        ops: List[Dict[str, Any]],
        logger: typedefs.Logger,
) -> Optional[typedefs.RawBody]:
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(f"JSON-patching the resource with: {ops!r}")
    try:
        return await client.patch_object(resource, namespace=body.metadata.namespace, name=_name_of(body),
                                         patch=ops, patch_type=protocols.PatchType.JSON)
    except (apierrors.APIConflictError, apierrors.APIUnprocessableEntityError):
        # The object has changed since: the newer version comes as a new event and is handled then.
        logger.debug("JSON-patching was rejected: the object has changed; waiting for the newer version.")
        return None
    except apierrors.APINotFoundError:
        return None


def _explain_rejection(error: apierrors.APIUnprocessableEntityError) -> str:
    """What the rejection of the framework's patch means for the object, and what to do about it."""
    message = (f"The object's new state was rejected by the API server: {error}. "
               f"The handlers' outcomes and results are not stored; the object is handled again "
               f"only at its next change (or the operator's restart).")
    if 'annotations' in str(error) and 'Too long' in str(error):
        message += (" The annotations cannot hold the last-handled state of an object this big: store it "
                    "in the status (settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage() "
                    "and settings.persistence.progress_storage = kopf.StatusProgressStorage()).")
    return message
