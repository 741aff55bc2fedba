"""
Freezing and resuming the operators from the command line (``kopf freeze``/``resume``).

A freeze is an ordinary peering entry of a pseudo-operator with a high
priority: the running operators with lower (or equal) priorities see it and
pause until it expires or is removed. So it is written exactly as operators
write their own keep-alives: ``status.<identity>`` of the peering object with
the priority, the lifetime and the time when it was last seen. Resuming
removes the entry (as an operator does on exit), so the paused ones resume
at once, without waiting for the entry to expire.
"""
from __future__ import annotations

import datetime
import getpass
import importlib
import inspect
import logging
import socket
from typing import Any, Collection, Mapping, Optional

import click

import kopf

logger = logging.getLogger('kopf.cli')

# The peering resources, the current group first; the legacy group is still served by older installations.
_GROUPS = ('kopf.dev', 'zalando.org')
_CLUSTER_PLURAL = 'clusterkopfpeerings'
_NAMESPACED_PLURAL = 'kopfpeerings'


def get_default_identity() -> str:
    """The identity of a human (or a script) that freezes the operators: ``user@host``."""
    return f'{getpass.getuser()}@{socket.gethostname()}'


def build_entry(*, priority: int, lifetime: int, now: Optional[datetime.datetime] = None) -> Mapping[str, Any]:
    """The peering entry, as the operators write theirs (the reading side expects these fields)."""
    moment = now if now is not None else datetime.datetime.now(datetime.timezone.utc)
    return {'priority': priority, 'lifetime': lifetime, 'lastseen': moment.isoformat()}


def check_namespaces(namespaces: Collection[str], clusterwide: bool) -> None:
    """Only specific namespaces can be frozen: a pattern would need listing the namespaces."""
    if namespaces and clusterwide:
        raise click.UsageError("Either --namespace or --all-namespaces can be used, not both.")
    if not namespaces and not clusterwide:
        raise click.UsageError("Specify the scope of the operators: --namespace=NAME (repeatable) "
                               "or --all-namespaces.")
    patterns = [namespace for namespace in namespaces if any(char in namespace for char in '*?!,[]')]
    if patterns:
        raise click.UsageError(f"Only specific namespaces can be used here, not patterns: {patterns!r}.")


async def touch(
        *,
        client: kopf.clients.ApiClient,
        peering_name: str,
        namespaces: Collection[str],
        clusterwide: bool,
        identity: str,
        entry: Optional[Mapping[str, Any]],
) -> None:
    """Write (or remove, if ``None``) the entry in the peering objects of every namespace or the cluster."""
    patch = {'status': {identity: dict(entry) if entry is not None else None}}
    scopes: Collection[Optional[str]] = [None] if clusterwide else list(namespaces)
    for namespace in scopes:
        await _patch_peering(client=client, peering_name=peering_name, namespace=namespace, patch=patch)


async def _patch_peering(
        *,
        client: kopf.clients.ApiClient,
        peering_name: str,
        namespace: Optional[str],
        patch: Mapping[str, Any],
) -> None:
    plural = _CLUSTER_PLURAL if namespace is None else _NAMESPACED_PLURAL
    for group in _GROUPS:
        resource = kopf.Resource(group, 'v1', plural, namespaced=namespace is not None)
        try:
            await client.patch_object(resource, namespace=namespace, name=peering_name, patch=patch)
        except kopf.clients.APINotFoundError:
            continue  # the resource or the object is absent in this group: try the next group.
        where = f"in {namespace!r}" if namespace is not None else "cluster-wide"
        logger.info(f"Peering {peering_name!r} {where} is updated: {patch!r}")
        return
    kind = 'ClusterKopfPeering' if namespace is None else f'KopfPeering in namespace {namespace!r}'
    raise click.ClickException(f"The peering object {peering_name!r} ({kind}) does not exist. "
                               f"Create it first (see the peering.yaml of Kopf).")


def get_driver() -> kopf.clients.ClientDriver:
    """The installed API client implementation (``kopf-client``, a dependency of this package)."""
    kopf_client = importlib.import_module('kopf_client')
    driver: kopf.clients.ClientDriver = kopf_client.driver
    return driver


async def login(*, driver: kopf.clients.ClientDriver, settings: kopf.OperatorSettings) -> kopf.clients.Vault:
    """Obtain the credentials the default way (kubeconfig, service account), as the operators do."""
    items: dict[str, kopf.ConnectionInfo] = {}
    for fn in driver.default_login_fns():
        kwargs = dict(logger=logger, settings=settings, memo=None, param=None, retry=0,
                      started=datetime.datetime.now(datetime.timezone.utc), runtime=datetime.timedelta(0))
        result = fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, kopf.ConnectionInfo):
            items[getattr(fn, '__name__', repr(fn))] = result
    if not items:
        raise click.ClickException("No credentials to access the cluster: neither a kubeconfig "
                                   "nor an in-cluster service account is found.")
    vault = kopf.clients.Vault()
    await vault.populate(items)
    return vault


async def update_peering(
        *,
        vault: Optional[kopf.clients.Vault],
        settings: Optional[kopf.OperatorSettings],
        peering_name: str,
        namespaces: Collection[str],
        clusterwide: bool,
        identity: str,
        entry: Optional[Mapping[str, Any]],
) -> None:
    """Log in (unless credentials are given), then write or remove the entry, then disconnect."""
    settings = settings if settings is not None else kopf.OperatorSettings()
    driver = get_driver()
    vault = vault if vault is not None else await login(driver=driver, settings=settings)
    client = driver.create_client(vault=vault, settings=settings)
    try:
        await touch(client=client, peering_name=peering_name, namespaces=namespaces,
                    clusterwide=clusterwide, identity=identity, entry=entry)
    finally:
        await client.close()
