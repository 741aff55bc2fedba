"""
Managed CRD conversions: ``settings.admission.managed`` with ``@kopf.on.convert``.

With a managed name set, the operator points the ``spec.conversion`` of every
CRD that its conversion functions serve at its webhook server: ``strategy:
Webhook``, the server's client config (its URL or service, with the path
``conversion``, and its CA bundle), ``conversionReviewVersions: [v1]``. It is
patched again whenever the server's client config changes (e.g. a tunnel's
new address).

On a graceful exit, each CRD gets its original ``spec.conversion`` back, as
Kopf removes the non-persistent webhooks from its managed configurations at
exit: the objects stay readable in every version without the operator
(Kubernetes then only rewrites their ``apiVersion``). The original is kept in
the CRD's annotation ``{managed}/original-conversion`` from the first patch
on, so that an operator killed before it could restore it (and restarted)
still restores the original, not the webhook of its previous run.

Patching a CRD needs the ``get`` and ``patch`` verbs on
``customresourcedefinitions.apiextensions.k8s.io``.
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import json
import logging
from typing import Any, Callable, Collection, Dict, List, Mapping, Sequence, Set, Tuple

from kopf._cogs.clients import errors, protocols
from kopf._cogs.structs import references, reviews
from kopf._core.engines.webhooks import webhookconfigs
from kopf._core.intents import conversions

logger = logging.getLogger('kopf.engines.conversionconfigs')

CRDS = references.Resource('apiextensions.k8s.io', 'v1', 'customresourcedefinitions',
                           kind='CustomResourceDefinition', namespaced=False)

# The last path component of the conversion webhook's URL: the reviews are told apart from admission ones by kind.
PATH = 'conversion'

# A JSON-patch with a stale resourceVersion is refused: re-read the CRD and try again, this many times.
ATTEMPTS = 3


def build_conversion(client_config: reviews.WebhookClientConfig) -> Dict[str, Any]:
    """The ``spec.conversion`` of a CRD that points at the server of this client config."""
    config: Dict[str, Any] = copy.deepcopy(dict(client_config))
    if config.get('url'):
        config['url'] = f"{config['url'].rstrip('/')}/{PATH}"
    if config.get('service'):
        root = (config['service'].get('path') or '').rstrip('/')
        config['service'] = dict(config['service'], path=f"{root}/{PATH}")
    config = {key: val for key, val in config.items() if val is not None}
    return {'strategy': 'Webhook', 'webhook': {'clientConfig': config, 'conversionReviewVersions': ['v1']}}


def select_crd_names(
        handlers_: Collection[conversions.ConversionHandler],
        resources: Collection[references.Resource],
) -> List[str]:
    """
    The names of the CRDs (``plural.group``) that the conversion functions serve, sorted.

    A CRD is served only if it has both versions of a function that selects it:
    a broad selector (a category, a callable, ``kopf.EVERYTHING``) never points
    the CRDs that the function cannot convert at the operator. Built-in
    resources have no CRDs, and are never selected.
    """
    versions: Dict[Tuple[str, str], Set[str]] = collections.defaultdict(set)
    resources_: Dict[Tuple[str, str], references.Resource] = {}  # one per resource, whatever its versions
    for resource in resources:
        key = (resource.group, resource.plural)
        versions[key].add(resource.version)
        if key not in resources_ or resource.preferred:
            resources_[key] = dataclasses.replace(resource, preferred=True)
    names: Set[str] = set()
    for handler in handlers_:
        matched = handler.selector.select(resources_.values()) if handler.selector is not None else []
        names.update(resource.name for resource in matched if '.' in resource.group and
                     {handler.source, handler.target} <= versions[(resource.group, resource.plural)])
    return sorted(names)


def build_annotation(managed: str) -> str:
    return f'{managed}/original-conversion'


class ManagedConversions:
    """The CRDs whose conversion this operator has pointed at its server (to restore them at exit)."""

    def __init__(self, client: protocols.ApiClient, *, managed: str) -> None:
        self.client = client
        self.annotation = build_annotation(managed)
        self.patched: List[str] = []

    async def apply(self, client_config: reviews.WebhookClientConfig, names: Sequence[str]) -> None:
        conversion = build_conversion(client_config)
        for name in names:
            await self._patch(name, lambda crd: self._pointing_ops(crd, conversion), verb='patch')
            if name not in self.patched:
                self.patched.append(name)
            logger.debug(f"The conversion of the CRD {name!r} is pointed at the operator's webhook server.")

    async def restore(self) -> None:
        """Give each patched CRD its original conversion back; a failure is logged, not raised (at exit)."""
        for name in self.patched:
            try:
                await self._patch(name, self._restoring_ops, verb='restore')
            except (errors.APIError, webhookconfigs.AdmissionSetupError) as e:
                logger.error(f"The conversion of the CRD {name!r} could not be restored: {e} "
                             f"Restore its spec.conversion from its annotation {self.annotation!r} by hand.")
            else:
                logger.debug(f"The conversion of the CRD {name!r} is restored.")
        self.patched.clear()

    async def _patch(self, name: str, build_ops: Callable[[Mapping[str, Any]], List[Dict[str, Any]]], *,
                     verb: str) -> None:
        for attempt in range(ATTEMPTS):
            try:
                crd = await self.client.get_object(CRDS, namespace=None, name=name)
                ops = build_ops(crd)
                if not ops:
                    return
                await self.client.patch_object(CRDS, namespace=None, name=name, patch=ops,
                                               patch_type=protocols.PatchType.JSON)
                return
            except errors.APIForbiddenError as e:
                raise webhookconfigs.AdmissionSetupError(
                    f"The operator is not allowed to {verb} the conversion of the CRD {name!r} (needs the verbs "
                    f"'get' and 'patch' on customresourcedefinitions.apiextensions.k8s.io): grant them in its "
                    f"ClusterRole, or unset settings.admission.managed and set the CRD's spec.conversion "
                    f"yourself. ({e})") from e
            except (errors.APIConflictError, errors.APIUnprocessableEntityError):
                if attempt == ATTEMPTS - 1:
                    raise  # not a race with another writer, but a refusal of the content itself

    def _pointing_ops(self, crd: Mapping[str, Any], conversion: Mapping[str, Any]) -> List[Dict[str, Any]]:
        """Set the conversion; remember the original one unless remembered already (by a previous run)."""
        metadata = crd.get('metadata', {})
        annotations = metadata.get('annotations') or {}
        ops: List[Dict[str, Any]] = [_test_version(metadata)]
        if self.annotation not in annotations:
            original = json.dumps(crd.get('spec', {}).get('conversion') or {'strategy': 'None'}, sort_keys=True)
            if annotations:
                ops.append({'op': 'add', 'path': f'/metadata/annotations/{_escape(self.annotation)}',
                            'value': original})
            else:
                ops.append({'op': 'add', 'path': '/metadata/annotations', 'value': {self.annotation: original}})
        ops.append({'op': 'add', 'path': '/spec/conversion', 'value': conversion})
        return ops

    def _restoring_ops(self, crd: Mapping[str, Any]) -> List[Dict[str, Any]]:
        metadata = crd.get('metadata', {})
        raw = (metadata.get('annotations') or {}).get(self.annotation)
        if raw is None:
            return []  # restored by someone else meanwhile
        try:
            original = json.loads(raw)
        except ValueError:
            logger.warning(f"The annotation {self.annotation!r} of the CRD {metadata.get('name')!r} is not "
                           f"JSON: its conversion is reset to the default (strategy None).")
            original = {'strategy': 'None'}
        return [_test_version(metadata),
                {'op': 'add', 'path': '/spec/conversion', 'value': original},
                {'op': 'remove', 'path': f'/metadata/annotations/{_escape(self.annotation)}'}]


def _test_version(metadata: Mapping[str, Any]) -> Dict[str, Any]:
    """Refuse the patch if the CRD changed since read: the annotations are then re-read, not overwritten."""
    return {'op': 'test', 'path': '/metadata/resourceVersion', 'value': metadata.get('resourceVersion')}


def _escape(key: str) -> str:
    """A key as a JSON-pointer's part (RFC 6901)."""
    return key.replace('~', '~0').replace('/', '~1')
