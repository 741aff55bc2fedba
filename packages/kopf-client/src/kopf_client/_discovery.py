"""
The discovery of resources served by the API server.

The core API (``/api/v1``) and each version of each API group
(``/apis/{group}/{version}``) list their resources. Subresources are
listed there as ``{plural}/{subresource}`` (e.g. ``pods/status``); they are
folded into their parent resource's ``subresources``, since they cannot be
listed or watched on their own.

Aggregated API groups (e.g. ``metrics.k8s.io``) are served by other
processes via the API server, and are often unavailable (503) for long
periods. One such group must not prevent the operator from serving all the
others; and it must not delay the scanning by the whole retrying sequence
either: the API server's 5xx answer for a group is definitive, so such groups
are skipped at once with a warning (network errors are still retried). They
are picked up by the next scan, when the framework re-scans.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Collection, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set

from kopf import clients
from kopf_client import _retrying, _transport

logger = logging.getLogger(__name__)

# Large clusters have dozens of groups: fetch them in parallel, but politely.
_MAX_PARALLEL_REQUESTS = 10

# Errors of one API group that do not fail the whole scan (the vault's LoginError does).
_SKIPPABLE_ERRORS: tuple[type[BaseException], ...] = (clients.APIError, *_retrying.NETWORK_ERRORS)


async def scan_resources(
        transport: _transport.Transport,
        *,
        groups: Optional[Collection[str]] = None,
) -> Collection[clients.Resource]:
    """All resources of the cluster, or of the given API groups only (``''`` is the core API)."""
    versions: List[tuple[str, str, bool]] = []  # (group, version, preferred)
    if groups is None or '' in groups:
        versions.append(('', 'v1', True))
    if groups is None or any(group for group in groups):
        group_list = await transport.request('GET', '/apis')
        versions.extend(_iter_group_versions(group_list, groups=groups))

    semaphore = asyncio.Semaphore(_MAX_PARALLEL_REQUESTS)
    results = await asyncio.gather(*[
        _scan_version(transport, semaphore, group=group, version=version, preferred=preferred)
        for group, version, preferred in versions
    ])
    return [resource for resources in results for resource in resources]


def _iter_group_versions(
        group_list: Any,
        *,
        groups: Optional[Collection[str]],
) -> Iterable[tuple[str, str, bool]]:
    """The versions of an ``APIGroupList``, marked whether each is its group's preferred one."""
    for group_info in (group_list or {}).get('groups') or []:
        name = group_info.get('name', '')
        if groups is not None and name not in groups:
            continue
        preferred = (group_info.get('preferredVersion') or {}).get('version')
        for version_info in group_info.get('versions') or []:
            version = version_info.get('version')
            if version:
                yield name, version, version == preferred


async def _scan_version(
        transport: _transport.Transport,
        semaphore: asyncio.Semaphore,
        *,
        group: str,
        version: str,
        preferred: bool,
) -> Sequence[clients.Resource]:
    """
    The resources of one group version; none if it fails (except for the core API).

    The core API is essential: the framework cannot work without it, so its
    errors escalate as they are (after the usual retries).
    """
    path = f'/apis/{group}/{version}' if group else f'/api/{version}'
    async with semaphore:
        if not group:
            resource_list = await transport.request('GET', path)
        else:
            try:
                resource_list = await transport.request('GET', path, retry_server_errors=False)
            except clients.APINotFoundError:
                # Deleted between the listing of groups and now (e.g. a CRD removed): not a problem.
                logger.debug(f"API group {group}/{version} is gone; skipping it.")
                return []
            except _SKIPPABLE_ERRORS as exc:
                logger.warning(f"API group {group}/{version} cannot be scanned; skipping it: {exc}")
                return []
    return parse_resource_list(resource_list, group=group, version=version, preferred=preferred)


def parse_resource_list(
        resource_list: Any,
        *,
        group: str,
        version: str,
        preferred: bool,
) -> Sequence[clients.Resource]:
    """The resources of an ``APIResourceList``, with their subresources folded in."""
    infos: Sequence[Mapping[str, Any]] = (resource_list or {}).get('resources') or []
    subresources: Dict[str, Set[str]] = {}
    for info in infos:
        plural, _, subresource = info.get('name', '').partition('/')
        if subresource:
            subresources.setdefault(plural, set()).add(subresource)

    resources: List[clients.Resource] = []
    for info in infos:
        name: str = info.get('name', '')
        if not name or '/' in name:
            continue
        kind: Optional[str] = info.get('kind') or None
        resources.append(clients.Resource(
            group=group,
            version=version,
            plural=name,
            kind=kind,
            # Some built-in resources have an empty singular name; kubectl derives it from the kind.
            singular=info.get('singularName') or (kind.lower() if kind else None),
            shortcuts=_frozen(info.get('shortNames')),
            categories=_frozen(info.get('categories')),
            subresources=frozenset(subresources.get(name, ())),
            namespaced=bool(info.get('namespaced', False)),
            preferred=preferred,
            verbs=_frozen(info.get('verbs')),
        ))
    return resources


def _frozen(values: Optional[Iterable[str]]) -> FrozenSet[str]:
    return frozenset(values or ())
