"""
Observation: which resources and namespaces are served, kept up to date.

Resources are resolved from the handlers' selectors against the cluster's
discovery; they are re-resolved when custom resource definitions appear,
change or disappear, so that CRDs created after the operator start are served
too. Namespaces matching the patterns are tracked from the namespaces' own
watch-stream; without the permissions to list them, the exactly named
namespaces are served as given.

Once the API has been reached, its unavailability never ends the observation
(see :mod:`kopf._cogs.aiokits.aioretries`): the resources already known are
served until discovery works again. The very first discovery is not retried
beyond the client's own retries: an API never reached at all is more likely a
wrong kubeconfig than an outage, so the operator exits and says so. A CRD being
deleted keeps its resource served until the CRD is gone, so that the delete
handlers of its objects run and our finalizers are removed (Kubernetes deletes
the objects first, and only then the CRD). An established CRD that a handler
wants but discovery does not list (discovery lags behind the CRD, or skipped its
failing API group) is scanned for again, soon at first, then every 30 seconds,
until discovery lists it.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any, Collection, Dict, FrozenSet, Iterable, Mapping, Optional, Set, Tuple

from kopf._cogs.aiokits import aioretries
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import namespaces, references
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
    warned_unresolved: FrozenSet[str] = frozenset()
    # The CRDs as last seen in their watch-stream, by name; set when they change.
    crds: Dict[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    crds_changed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    # CRDs being deleted, by name: their (group, plural), served until the CRD is gone.
    terminating: Dict[str, Tuple[str, str]] = dataclasses.field(default_factory=dict)
    # CRDs deleted, by name: their (group, plural), not served even while discovery still lists them.
    gone: Dict[str, Tuple[str, str]] = dataclasses.field(default_factory=dict)

    def update(self, *, resources: Optional[Iterable[references.Resource]] = None,
               namespaces: Optional[Iterable[references.Namespace]] = None) -> None:
        if resources is not None and frozenset(resources) != self.resources:
            self.resources = frozenset(resources)
            self.changed.set()
        if namespaces is not None and frozenset(namespaces) != self.namespaces:
            self.namespaces = frozenset(namespaces)
            self.changed.set()


# Discovery may list a CRD's resource a moment after the CRD is established, or skip its API group while the group
# fails: scans again after these delays, then after the last one as long as it lasts.
DISCOVERY_LAG_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)


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
    _warn_unresolved(insights, selectors, available)
    insights.update(resources=_keep_served(insights, selected))
    insights.ready_resources.set()


def _keep_served(insights: Insights, selected: Collection[references.Resource]) -> Set[references.Resource]:
    """
    Keep the streams of the resources served now, even if discovery describes them differently.

    A terminating CRD is advertised with fewer verbs (no create/patch): the same
    resource must not be seen as a new one, or its stream would be restarted
    mid-handling. And a terminating CRD's resource stays served even if it
    disappears from discovery, until the CRD is gone. Once it is gone, its
    resource is not served even if discovery, updated a moment later, still lists it.
    """
    served = {_identity(r): r for r in insights.resources}
    gone = set(insights.gone.values())
    kept = {served.get(_identity(r), r) for r in selected if (r.group, r.plural) not in gone}
    dying = set(insights.terminating.values())
    kept.update(r for r in insights.resources if (r.group, r.plural) in dying)
    return kept


def _identity(resource: references.Resource) -> Tuple[str, str, str]:
    return resource.group, resource.version, resource.plural


def _warn_unresolved(insights: Insights, selectors: Collection[references.Selector],
                     available: Collection[references.Resource]) -> None:
    """Say which handlers' resources do not exist (a typo, or a CRD not created yet): they sit idle. Once a set."""
    unresolved = [repr(selector) for selector in selectors
                  if not selector.is_ambiguous(available) and not selector.select(available)]
    if unresolved and frozenset(unresolved) != insights.warned_unresolved:
        logger.warning(f"Unresolved resources cannot be served (try creating their CRDs): {', '.join(unresolved)}")
    insights.warned_unresolved = frozenset(unresolved)


async def resource_observer(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        registry: registries.OperatorRegistry,
        insights: Insights,
) -> None:
    """Resolve the resources now, and again whenever a CRD changes (unless disabled)."""
    await scan_resources(client=client, registry=registry, insights=insights)  # failures end the operator
    if settings.scanning.disabled or not registry.selectors:
        return
    outage = aioretries.Outage(what="watch the CRDs", meanwhile=_serving_meanwhile(insights))
    catchup = asyncio.create_task(_catch_up_with_discovery(client=client, registry=registry, insights=insights),
                                  name='discovery catch-up')
    try:
        while True:
            try:
                await _follow_crds(client=client, settings=settings, registry=registry, insights=insights)
            except apierrors.APIForbiddenError:
                logger.warning("Not enough permissions to watch CRDs: resources created later will not be served "
                               "until the operator restarts.")
                return
            except Exception as e:  # an outage outlasting the client's retries: never fatal
                outage.meanwhile = _serving_meanwhile(insights)
                await outage.wait(e)
    finally:
        catchup.cancel()
        await asyncio.gather(catchup, return_exceptions=True)


async def _rescan(
        *,
        client: protocols.ApiClient,
        registry: registries.OperatorRegistry,
        insights: Insights,
) -> None:
    """Scan the resources until it succeeds: the ones known so far are served meanwhile."""
    outage = aioretries.Outage(what="discover the resources (GET /api, /apis)",
                            meanwhile=_serving_meanwhile(insights))
    await aioretries.persist(outage, lambda: scan_resources(client=client, registry=registry, insights=insights))


def _serving_meanwhile(insights: Insights) -> str:
    return f"serving the {len(insights.resources)} resource(s) known so far meanwhile"


async def _follow_crds(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        registry: registries.OperatorRegistry,
        insights: Insights,
) -> None:
    with watching.announced(CRDS, None):
        async for event in watching.continuous_watch(client=client, settings=settings,
                                                     resource=CRDS, namespace=None,
                                                     retry_forbidden=False):
            terminated = _track_termination(insights, event.get('type'), event.get('object', {}))
            _remember_crd(insights, event.get('type'), event.get('object', {}))
            if event.get('type') is not None or terminated:  # the initial listing is already reflected
                await _rescan(client=client, registry=registry, insights=insights)


def _remember_crd(insights: Insights, event_type: Optional[str], crd: Mapping[str, Any]) -> None:
    name = crd.get('metadata', {}).get('name')
    if name is not None:
        if event_type == 'DELETED':
            insights.crds.pop(name, None)
        else:
            insights.crds[name] = _compact(crd)
        insights.crds_changed.set()


def _compact(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    """Only what the catch-up reads: a CRD's schemas can be hundreds of KiB, and every CRD is kept."""
    metadata, spec, status = crd.get('metadata', {}), crd.get('spec', {}), crd.get('status') or {}
    return {
        'metadata': {key: metadata[key] for key in ('name', 'deletionTimestamp') if key in metadata},
        'spec': {'group': spec.get('group', ''), 'names': spec.get('names', {}),
                 'versions': [{'name': v.get('name', ''), 'served': v.get('served')}
                              for v in spec.get('versions') or ()]},
        'status': {'conditions': [{'type': c.get('type'), 'status': c.get('status')}
                                  for c in status.get('conditions') or ()]},
    }


async def _catch_up_with_discovery(
        *,
        client: protocols.ApiClient,
        registry: registries.OperatorRegistry,
        insights: Insights,
) -> None:
    """
    Scan again while an established CRD that a handler wants is not served.

    The CRD's last event (its ``Established`` condition) may come before the
    API server's discovery lists its resource; or a scan skipped the CRD's API
    group because its discovery failed (e.g. at the API server's start-up). No
    CRD event would trigger another scan, and the resource would stay unserved.
    A CRD's change (scanned for at once by the CRDs' stream) restarts the delays.
    """
    attempt = 0
    while True:
        if insights.crds_changed.is_set():
            insights.crds_changed.clear()
            attempt = 0
        if not any(_awaited_in_discovery(crd, registry=registry, insights=insights) for crd in insights.crds.values()):
            await insights.crds_changed.wait()
            continue
        delay = DISCOVERY_LAG_DELAYS[min(attempt, len(DISCOVERY_LAG_DELAYS) - 1)]
        attempt += 1
        try:
            await asyncio.wait_for(insights.crds_changed.wait(), timeout=delay)
        except asyncio.TimeoutError:
            await _rescan(client=client, registry=registry, insights=insights)


def _awaited_in_discovery(crd: Mapping[str, Any], *, registry: registries.OperatorRegistry,
                          insights: Insights) -> bool:
    """Whether the CRD is established, not being deleted, wanted by a handler, and not served yet."""
    status = crd.get('status') or {}
    established = any(c.get('type') == 'Established' and c.get('status') == 'True'
                      for c in status.get('conditions') or [])
    if not established or crd.get('metadata', {}).get('deletionTimestamp'):
        return False
    group, plural = _crd_key(crd)
    if any((r.group, r.plural) == (group, plural) for r in insights.resources):
        return False
    spec = crd.get('spec', {})
    names = spec.get('names', {})
    defined = [references.Resource(group, version.get('name', ''), plural, kind=names.get('kind'),
                                   singular=names.get('singular'),
                                   shortcuts=frozenset(names.get('shortNames') or ()),
                                   categories=frozenset(names.get('categories') or ()))
               for version in spec.get('versions') or () if version.get('served')]
    return any(selector.check(resource) for selector in registry.selectors for resource in defined)


def _crd_key(crd: Mapping[str, Any]) -> Tuple[str, str]:
    """The (group, plural) of the CRD's resource, as the served resources are compared by it."""
    spec = crd.get('spec', {})
    return spec.get('group', ''), spec.get('names', {}).get('plural', '')


def _track_termination(insights: Insights, event_type: Optional[str], crd: Mapping[str, Any]) -> bool:
    """Remember the CRDs being deleted and deleted, until created again; say if it changed anything."""
    name = crd.get('metadata', {}).get('name')
    key = _crd_key(crd)
    served = [r for r in insights.resources if (r.group, r.plural) == key]
    if name is None:
        return False
    if event_type == 'DELETED':
        insights.gone[name] = key
        if insights.terminating.pop(name, None) is not None or served:
            logger.info(f"The CRD {name!r} is deleted: its resource is not served anymore.")
            return True
        return False
    revived = insights.gone.pop(name, None) is not None  # created again after its deletion
    if crd.get('metadata', {}).get('deletionTimestamp') and name not in insights.terminating:
        insights.terminating[name] = key
        if served:
            logger.info(f"The CRD {name!r} is being deleted: its objects are served until they are gone.")
        return True
    return revived


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
    specific = namespaces.select_specific_namespaces(patterns)
    if set(specific) == set(patterns) and all(isinstance(p, str) and ',' not in p for p in patterns):
        # Exact names only: nothing to match, no need to list the namespaces at all.
        insights.update(namespaces=specific)
        insights.ready_namespaces.set()
        return
    existing: Set[str] = set()
    outage = aioretries.Outage(what="watch the namespaces", meanwhile="serving the namespaces known so far meanwhile")
    while True:
        try:
            await _follow_namespaces(client=client, settings=settings, patterns=patterns,
                                     insights=insights, existing=existing)
        except apierrors.APIForbiddenError:
            break
        except Exception as e:  # an outage outlasting the client's retries: never fatal
            await outage.wait(e)
    logger.warning("Not enough permissions to watch the namespaces: serving the specific ones as given "
                   f"({', '.join(sorted(specific)) or 'none'}); patterns are ignored.")
    insights.update(namespaces=specific)
    insights.ready_namespaces.set()


async def _follow_namespaces(
        *,
        client: protocols.ApiClient,
        settings: configuration.OperatorSettings,
        patterns: Collection[references.NamespacePattern],
        insights: Insights,
        existing: Set[str],
) -> None:
    listed = asyncio.Event()
    readiness = asyncio.create_task(_ready_when_listed(listed, insights, existing, patterns))
    try:
        with watching.announced(NAMESPACES, None):
            async for event in watching.continuous_watch(client=client, settings=settings,
                                                         resource=NAMESPACES, namespace=None,
                                                         retry_forbidden=False, on_listed=listed):
                name = event.get('object', {}).get('metadata', {}).get('name')
                if name is None:
                    continue
                if event.get('type') == 'DELETED':
                    existing.discard(name)
                else:
                    existing.add(name)
                insights.update(namespaces=set(namespaces.iter_namespace_matches(existing, patterns)))
                if event.get('type') is not None or not insights.ready_namespaces.is_set():
                    insights.ready_namespaces.set()
    finally:
        readiness.cancel()


async def _ready_when_listed(
        listed: asyncio.Event,
        insights: Insights,
        existing: Set[str],
        patterns: Collection[references.NamespacePattern],
) -> None:
    """
    Be ready once the namespaces are listed, even if none is (e.g. with label selectors
    on namespaces in ``settings.watching``, none of the namespaces may be visible).
    """
    await listed.wait()
    insights.update(namespaces=set(namespaces.iter_namespace_matches(existing, patterns)))
    insights.ready_namespaces.set()
