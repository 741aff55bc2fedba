"""
Peering: how several operators of the same kind learn about each other.

Only the detection of the peering mode is here: with no peering object
(``default`` unless named otherwise), the operator runs standalone, as the
manual describes; with ``--peering``/``settings.peering.mandatory``, a missing
peering object is an error that says how to create it.
"""
from __future__ import annotations

import logging

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references

logger = logging.getLogger('kopf.reactor.peering')

CLUSTER_PEERINGS = references.Resource('kopf.dev', 'v1', 'clusterkopfpeerings', namespaced=False)
NAMESPACED_PEERINGS = references.Resource('kopf.dev', 'v1', 'kopfpeerings', namespaced=True)


class PeeringObjectMissingError(Exception):
    """The mandatory peering object does not exist."""


async def detect_peering(*, client: protocols.ApiClient, settings: configuration.OperatorSettings) -> bool:
    """Whether the peering object exists (so peering is used); log the standalone fallback."""
    if settings.peering.standalone:
        return False
    name = settings.peering.name
    exists = False
    if settings.peering.clusterwide:
        exists = await _exists(client, CLUSTER_PEERINGS, namespace=None, name=name)
    if not exists and settings.peering.mandatory:
        raise PeeringObjectMissingError(
            f"The peering object {name!r} does not exist, but peering is mandatory (--peering). "
            f"Create a {'ClusterKopfPeering' if settings.peering.clusterwide else 'KopfPeering'} "
            f"named {name!r}, or run with --standalone.")
    if not exists:
        logger.warning("Default peering object is not found, falling back to the standalone mode.")
        settings.peering.standalone = True
        return False
    logger.warning(f"Peering object {name!r} is found, but peering is not supported by this version: "
                   f"running in the standalone mode.")
    settings.peering.standalone = True
    return False


async def _exists(client: protocols.ApiClient, resource: references.Resource,
                  *, namespace: references.Namespace, name: str) -> bool:
    try:
        await client.get_object(resource, namespace=namespace, name=name)
    except (apierrors.APINotFoundError, apierrors.APIForbiddenError):
        return False
    return True
