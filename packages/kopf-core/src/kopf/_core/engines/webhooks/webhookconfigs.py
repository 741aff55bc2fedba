"""
Managed webhook configurations: ``settings.admission.managed = 'name'``.

The operator keeps one ValidatingWebhookConfiguration and one
MutatingWebhookConfiguration of that name: one webhook per admission handler,
named ``{handler id}.{name}``, with its URL path ending in the handler id (so
that the server runs only that handler), the rules from the handler's
resources, operations and subresource, and the server's current client config
(e.g. its CA bundle). The webhooks are replaced as a whole on every change of
the client config; on a graceful exit, only the persistent ones are kept.
"""
from __future__ import annotations

import copy
import logging
import re
import urllib.parse
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence

from kopf._cogs.clients import errors, protocols
from kopf._cogs.structs import references, reviews
from kopf._core.intents import filters, webhooks

logger = logging.getLogger('kopf.engines.webhookconfigs')

GROUP = 'admissionregistration.k8s.io'
CONFIGURATIONS = {
    webhooks.WebhookType.VALIDATING: references.Resource(
        GROUP, 'v1', 'validatingwebhookconfigurations', kind='ValidatingWebhookConfiguration', namespaced=False),
    webhooks.WebhookType.MUTATING: references.Resource(
        GROUP, 'v1', 'mutatingwebhookconfigurations', kind='MutatingWebhookConfiguration', namespaced=False),
}

# Kubernetes caps the webhooks' timeouts at 30 seconds; the handlers get all of it.
TIMEOUT_SECONDS = 30


class AdmissionSetupError(Exception):
    """The admission cannot work as configured (missing server, package, or permissions)."""


def build_webhooks(
        handlers_: Sequence[webhooks.WebhookHandler],
        *,
        type: webhooks.WebhookType,
        name: str,
        client_config: reviews.WebhookClientConfig,
        resources: Collection[references.Resource],
        persistent_only: bool = False,
) -> List[Dict[str, Any]]:
    """The ``.webhooks`` of one managed configuration: one per handler id, in the order of declaration."""
    result: Dict[str, Dict[str, Any]] = {}
    for handler in handlers_:
        if handler.type != type or (persistent_only and not handler.persistent):
            continue
        matched = handler.selector.select(resources) if handler.selector is not None else []
        rules = [rule for resource in sorted(matched, key=repr) for rule in _build_rules(handler, resource)]
        webhook = result.get(handler.id)
        if webhook is not None:  # the same id under several selectors: one webhook for all its resources
            webhook['rules'].extend(rule for rule in rules if rule not in webhook['rules'])
        elif rules:
            result[handler.id] = _build_webhook(handler, name=name, client_config=client_config, rules=rules)
    return list(result.values())


def _build_webhook(
        handler: webhooks.WebhookHandler,
        *,
        name: str,
        client_config: reviews.WebhookClientConfig,
        rules: List[Dict[str, Any]],
) -> Dict[str, Any]:
    webhook: Dict[str, Any] = {
        'name': build_webhook_name(handler.id, name),
        'clientConfig': _route_to(client_config, handler.id),
        'rules': rules,
        'sideEffects': 'NoneOnDryRun' if handler.side_effects else 'None',
        'failurePolicy': 'Ignore' if handler.ignore_failures else 'Fail',
        'matchPolicy': 'Equivalent',
        'timeoutSeconds': TIMEOUT_SECONDS,
        'admissionReviewVersions': ['v1', 'v1beta1'],
    }
    selector = build_object_selector(handler.labels)
    if selector is not None:
        webhook['objectSelector'] = selector
    return webhook


def build_webhook_name(handler_id: str, name: str) -> str:
    """A valid webhook name (a DNS subdomain) from the handler id: ``create_fn.auto.kopf.dev``."""
    cleaned = re.sub(r'[^a-z0-9.-]+', '-', handler_id.lower()).strip('.-')
    return f'{cleaned or "webhook"}.{name}'


def _route_to(client_config: reviews.WebhookClientConfig, handler_id: str) -> Dict[str, Any]:
    """The server's client config with the handler id as the last path component."""
    result: Dict[str, Any] = copy.deepcopy(dict(client_config))
    quoted = urllib.parse.quote(handler_id, safe='')
    if result.get('url'):
        result['url'] = f"{result['url'].rstrip('/')}/{quoted}"
    if result.get('service'):
        root = (result['service'].get('path') or '').rstrip('/')
        result['service'] = dict(result['service'], path=f"{root}/{quoted}")
    return {key: val for key, val in result.items() if val is not None}


def _build_rules(handler: webhooks.WebhookHandler, resource: references.Resource) -> List[Dict[str, Any]]:
    if handler.subresource is None:
        names = [resource.plural]
    elif handler.subresource == '*':
        names = [resource.plural, f'{resource.plural}/*']
    else:
        names = [f'{resource.plural}/{handler.subresource}']
    operations = sorted(handler.operations) if handler.operations is not None else ['*']
    return [{'apiGroups': [resource.group], 'apiVersions': [resource.version], 'resources': names,
             'operations': operations, 'scope': '*'}]


def build_object_selector(labels: Optional[filters.MetaFilter]) -> Optional[Dict[str, Any]]:
    """
    The labels filter as the webhook's ``objectSelector``, where Kubernetes can express it.

    Exact values, ``kopf.PRESENT`` and ``kopf.ABSENT`` become the match
    expressions; callbacks cannot, so they are only checked by the operator.
    """
    expressions: List[Dict[str, Any]] = []
    for key, criterion in (labels or {}).items():
        if criterion is filters.PRESENT:
            expressions.append({'key': key, 'operator': 'Exists'})
        elif criterion is filters.ABSENT:
            expressions.append({'key': key, 'operator': 'DoesNotExist'})
        elif isinstance(criterion, str):
            expressions.append({'key': key, 'operator': 'In', 'values': [criterion]})
    return {'matchExpressions': expressions} if expressions else None


async def apply_configurations(
        client: protocols.ApiClient,
        *,
        name: str,
        handlers_: Sequence[webhooks.WebhookHandler],
        client_config: reviews.WebhookClientConfig,
        resources: Collection[references.Resource],
        persistent_only: bool = False,
) -> None:
    """Create or patch both managed configurations with the webhooks of all handlers."""
    for type, resource in CONFIGURATIONS.items():
        items = build_webhooks(handlers_, type=type, name=name, client_config=client_config,
                               resources=resources, persistent_only=persistent_only)
        await _upsert(client, resource=resource, name=name, webhooks_=items)


async def _upsert(
        client: protocols.ApiClient,
        *,
        resource: references.Resource,
        name: str,
        webhooks_: List[Dict[str, Any]],
) -> None:
    patch: Mapping[str, Any] = {'webhooks': webhooks_}
    try:
        try:
            await client.patch_object(resource, namespace=None, name=name, patch=patch)
            verb = 'patched'
        except errors.APINotFoundError:
            if not webhooks_:
                return  # nothing to keep, nothing to create
            body = {'apiVersion': resource.api_version, 'kind': resource.kind,
                    'metadata': {'name': name}, 'webhooks': webhooks_}
            await client.create_object(resource, namespace=None, body=body)
            verb = 'created'
    except errors.APIForbiddenError as e:
        raise AdmissionSetupError(
            f"The operator is not allowed to manage {resource.name} (needs the verbs 'create' and 'patch'): "
            f"grant them in its ClusterRole, or unset settings.admission.managed. ({e})") from e
    logger.debug(f"The {resource.kind} {name!r} is {verb} with {len(webhooks_)} webhook(s).")
