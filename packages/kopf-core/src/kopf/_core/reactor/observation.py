"""
Observation: which resources and namespaces are served, kept up to date.

Resources are resolved from the handlers' selectors against the cluster's
discovery; they are re-resolved when custom resource definitions appear,
change or disappear, so that CRDs created after the operator start are served
too. Namespaces matching the patterns are tracked from the namespaces' own
watch-stream; without the permissions to list them, the exactly named
namespaces are served as given.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Collection, FrozenSet, Iterable, Optional, Set

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.intents import registries
from kopf._core.reactor import watching

logger = logging.getLogger('kopf.reactor.observation')

CRDS = references.Resource('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', namespaced=False)
NAMESPACES = references.Resource('', 'v1', 'namespaces', namespaced=False)


@dataclasses.dataclass
class Insights:
    """The current knowledge of what to serve; the orchestrator follows it."""
    resources: FrozenSet[references.Resource] = frozenset()
    namespaces: FrozenSet[references.Namespace] = frozenset()
    changed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    ready_resources: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    ready_namespaces: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    warned_ambiguous: Set[references.Selector] = dataclasses.field(default_factory=set)

    def update(self, *, resources: Optional[Iterable[references.Resource]] = None,
               namespaces: Optional[Iterable[references.Namespace]] = None) -> None:
        if resources is not None and frozenset(resources) != self.resources:
            self.resources = frozenset(resources)
            self.changed.set()
        if namespaces is not None and frozenset(namespaces) != self.namespaces:
            self.namespaces = frozenset(namespaces)
            self.changed.set()


def _groups_to_scan(selectors: Collection[references.Selector]) -> Optional[Collection[str]]:
    """Only the groups named by all selectors, or everything if any selector has no group."""
    groups = {selector.group for selector in selectors}
    return None if None in groups else {group for group in groups if group is not None}


async def scan_resources(
        *,
        client: protocols.ApiClient,
        registry: registries.OperatorRegistry,
        insights: Insights,
) -> None:
    selectors = registry.selectors
    available = await client.scan_resources(groups=_groups_to_scan(selectors))
    selected: Set[references.Resource] = set()
    for selector in selectors:
        if selector.is_ambiguous(available):
            if selector not in insights.warned_ambiguous:
                insights.warned_ambiguous.add(selector)
                matched = sorted(repr(r) for r in available if selector.check(r))
                logger.warning(f"Ambiguous resources will not be served (try specifying API groups): "
                               f"{selector!r} matches {', '.join(matched)}.")
            continue
        selected.update(r for r in selector.select(available) if 'watch' in r.verbs or not r.verbs)
    insights.update(resources=selected)
    insights.ready_resources.set()


async def resource_observer(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        registry: registries.OperatorRegistry,
        insights: Insights,
) -> None:
    """Resolve the resources now, and again whenever a CRD changes (unless disabled)."""
    await scan_resources(client=client, registry=registry, insights=insights)
    if settings.scanning.disabled or not registry.selectors:
        return
    try:
        async for event in watching.continuous_watch(client=client, settings=settings,
                                                     resource=CRDS, namespace=None):
            if event.get('type') is not None:  # the initial listing is already reflected
                await scan_resources(client=client, registry=registry, insights=insights)
    except apierrors.APIForbiddenError:
        logger.warning("Not enough permissions to watch CRDs: resources created later will not be served "
                       "until the operator restarts.")


async def namespace_observer(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        clusterwide: bool,
        patterns: Collection[references.NamespacePattern],
        insights: Insights,
) -> None:
    """Track the namespaces matching the patterns (None alone means cluster-wide)."""
    if clusterwide:
        insights.update(namespaces={None})
        insights.ready_namespaces.set()
        return
    specific = references.select_specific_namespaces(patterns)
    if set(specific) == set(patterns) and all(',' not in p for p in patterns):
        # Exact names only: nothing to match, no need to list the namespaces at all.
        insights.update(namespaces=specific)
        insights.ready_namespaces.set()
        return
    existing: Set[str] = set()
    try:
        async for event in watching.continuous_watch(client=client, settings=settings,
                                                     resource=NAMESPACES, namespace=None):
            name = event.get('object', {}).get('metadata', {}).get('name')
            if name is None:
                continue
            if event.get('type') == 'DELETED':
                existing.discard(name)
            else:
                existing.add(name)
            insights.update(namespaces=set(references.iter_namespace_matches(existing, patterns)))
            if event.get('type') is not None or not insights.ready_namespaces.is_set():
                insights.ready_namespaces.set()
    except apierrors.APIForbiddenError:
        logger.warning("Not enough permissions to watch the namespaces: serving the specific ones as given "
                       f"({', '.join(sorted(specific)) or 'none'}); patterns are ignored.")
        insights.update(namespaces=specific)
        insights.ready_namespaces.set()
