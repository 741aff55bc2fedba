"""
The public seam for API client implementations.

An API client package (such as ``kopf-client``) implements :class:`ApiClient`
and exposes a :class:`ClientDriver` under the ``kopf.clients`` entry-point
group, e.g. in its ``pyproject.toml``::

    [project.entry-points."kopf.clients"]
    aiohttp = "kopf_client:driver"

A tool that vendors only ``kopf`` passes its own driver explicitly instead:
``kopf.run(client=MyDriver())``. Clients raise the errors below for error
responses, so that the framework reacts the same way with any transport.
"""
from kopf._cogs.clients.errors import (
    APIClientError,
    APIConflictError,
    APIError,
    APIForbiddenError,
    APIGoneError,
    APINotFoundError,
    APIServerError,
    APITooManyRequestsError,
    APIUnauthorizedError,
    APIUnprocessableEntityError,
    error_class_for_status,
)
from kopf._cogs.clients.protocols import (
    ApiClient,
    ClientDriver,
    ObjectPage,
    ObjectReader,
    ObjectWatcher,
    ObjectWriter,
    PatchType,
    ResourceScanner,
)
from kopf._cogs.clients.scheduling import request_priority
from kopf._cogs.helpers.typedefs import RawBody, RawEvent
from kopf._cogs.structs.credentials import ConnectionInfo, LoginError, Vault, VaultKey
from kopf._cogs.structs.references import Namespace, Resource

__all__ = [
    'APIClientError',
    'APIConflictError',
    'APIError',
    'APIForbiddenError',
    'APIGoneError',
    'APINotFoundError',
    'APIServerError',
    'APITooManyRequestsError',
    'APIUnauthorizedError',
    'APIUnprocessableEntityError',
    'ApiClient',
    'ClientDriver',
    'ConnectionInfo',
    'LoginError',
    'Namespace',
    'ObjectPage',
    'ObjectReader',
    'ObjectWatcher',
    'ObjectWriter',
    'PatchType',
    'RawBody',
    'RawEvent',
    'Resource',
    'ResourceScanner',
    'Vault',
    'VaultKey',
    'error_class_for_status',
    'request_priority',
]
