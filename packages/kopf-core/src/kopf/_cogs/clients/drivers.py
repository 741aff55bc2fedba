"""
Discovery of the installed API client implementation (the ``kopf.clients`` entry points).

The core has no client of its own: it finds one installed (``kopf-client``
registers itself), or takes one passed explicitly by an embedding tool.
"""
from __future__ import annotations

import importlib.metadata
from typing import Optional

from kopf._cogs.clients import protocols

ENTRY_POINT_GROUP = 'kopf.clients'


class ClientNotFoundError(ImportError):
    """No API client implementation is installed, and none is given."""


def find_driver(preferred: Optional[str] = None) -> protocols.ClientDriver:
    """
    Load the installed client driver (the named one if several are installed).

    Fails at once with a message that says what to install: an operator
    without a client cannot do anything useful.
    """
    entry_points = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    if preferred is not None:
        entry_points = [ep for ep in entry_points if ep.name == preferred]
    if not entry_points:
        raise ClientNotFoundError(
            "No Kubernetes API client is installed for kopf. Install one: `pip install kopf-client` "
            "(or pass a client driver explicitly: kopf.run(client=...) / kopf.operator(client=...)).")
    entry_points.sort(key=lambda ep: ep.name)
    driver: protocols.ClientDriver = entry_points[0].load()
    return driver
