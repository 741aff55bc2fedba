"""
The protocol of a Kubernetes API client, as the framework needs it.

The framework never sends HTTP itself: it calls these methods. Each small
protocol is one capability; :class:`ApiClient` combines them. Implementations
raise the errors from :mod:`kopf._cogs.clients.errors` for error responses
(after their own retrying of network errors, 5xx and 429, per the settings),
report 401s to the vault themselves, and never return partial results silently.

All ``namespace`` arguments follow :meth:`Resource.get_url`: ``None`` means
cluster-wide for namespaced resources, and is required for cluster-scoped ones.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, AsyncIterator, Collection, Iterable, Mapping, Optional, Protocol, Sequence, Union

from kopf._cogs.configs import configuration
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import credentials, references


class PatchType(str, enum.Enum):
    """The content types of PATCH requests that the framework uses."""
    MERGE = 'application/merge-patch+json'
    JSON = 'application/json-patch+json'


@dataclasses.dataclass(frozen=True)
class ObjectPage:
    """One page of a paginated listing."""
    items: Sequence[typedefs.RawBody]
    resource_version: str  # of the list, to start watching from
    continue_token: Optional[str] = None  # None when this is the last page
    shard_selector: Optional[str] = None  # as the server applied it (its ``shardInfo``); None if it did not


INITIAL_EVENTS_END = 'k8s.io/initial-events-end'
"""The annotation of the BOOKMARK that ends the initial events of a streaming list."""


class ResourceScanner(Protocol):
    """The discovery of the cluster's resources."""

    async def scan_resources(
            self,
            *,
            groups: Optional[Collection[str]] = None,
    ) -> Collection[references.Resource]:
        """
        All resources served by the API server (in the given groups only, if set).

        Versions other than the group's preferred one are included with
        ``preferred=False``; subresources are reported in ``subresources`` of
        their parent resource, never as resources of their own. API groups that
        fail to respond (e.g. an aggregated API that is down) are skipped.
        """
        ...


class ObjectReader(Protocol):
    """Reading objects: one by its name, or lists of them (paginated)."""

    async def get_object(
            self,
            resource: references.Resource,
            *,
            namespace: references.Namespace,
            name: str,
    ) -> typedefs.RawBody:
        """Read one object. Raises :class:`APINotFoundError` if it is absent."""
        ...

    async def list_objects(
            self,
            resource: references.Resource,
            *,
            namespace: references.Namespace,
            limit: Optional[int] = None,
            continue_token: Optional[str] = None,
            label_selector: Optional[str] = None,
            field_selector: Optional[str] = None,
            shard_selector: Optional[str] = None,
    ) -> ObjectPage:
        """
        Read one page of objects. Raises :class:`APIGoneError` if the token expired.

        ``limit`` is passed as is (0 means no limit, as for the API server).
        The selectors are the API's ``labelSelector``, ``fieldSelector`` and
        ``shardSelector``, passed as given (the server refuses the invalid ones);
        a server that ignores the shard selector returns all objects and no
        ``shard_selector`` in the page.
        """
        ...


class ObjectWatcher(Protocol):
    """Watching the objects of a resource: the stream of their changes."""

    def watch_objects(
            self,
            resource: references.Resource,
            *,
            namespace: references.Namespace,
            resource_version: Optional[str] = None,
            timeout_seconds: Optional[float] = None,
            allow_bookmarks: bool = True,
            label_selector: Optional[str] = None,
            field_selector: Optional[str] = None,
            shard_selector: Optional[str] = None,
            send_initial_events: bool = False,
    ) -> AsyncIterator[typedefs.RawEvent]:
        """
        Stream the watch-events of one watch request until the server closes it.

        The selectors are as in :meth:`ObjectReader.list_objects`. With
        ``send_initial_events``, this is a streaming list: the server first sends
        the objects as ``ADDED`` events and then a ``BOOKMARK`` annotated with
        :data:`INITIAL_EVENTS_END` (``resource_version`` is then the least
        version the state must have, or ``None`` for the latest; bookmarks are
        requested whatever ``allow_bookmarks`` says). A server without streaming
        lists refuses it with :class:`APIClientError` (400/422).

        ``ADDED``, ``MODIFIED``, ``DELETED`` and ``BOOKMARK`` events are yielded
        as they arrive. An ``ERROR`` event ends the stream with the matching
        :class:`APIError` (``APIGoneError`` for 410, so that the caller re-lists).
        A stream that stays silent longer than the client-side inactivity limit
        (see ``settings.watching``) ends with ``asyncio.TimeoutError``.
        """
        ...


class ObjectWriter(Protocol):
    """Creating, patching and deleting objects."""

    async def create_object(
            self,
            resource: references.Resource,
            *,
            namespace: references.Namespace,
            body: Mapping[str, Any],
            backoffs: Optional[Iterable[float]] = None,
    ) -> typedefs.RawBody:
        """
        Create an object. Raises :class:`APIConflictError` if it already exists.

        ``backoffs``, if given, replace ``settings.networking.error_backoffs`` for
        this request's own retries of network errors, 5xx and 429: for callers that
        retry on their own schedule (e.g. posting the k8s-events with
        ``settings.posting``'s back-offs). An empty one means no retries at all.
        """
        ...

    async def patch_object(
            self,
            resource: references.Resource,
            *,
            namespace: references.Namespace,
            name: str,
            patch: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
            patch_type: PatchType = PatchType.MERGE,
            subresource: Optional[str] = None,
    ) -> typedefs.RawBody:
        """
        Patch an object (or its subresource, e.g. ``status``), return the new body.

        Raises :class:`APINotFoundError` if the object is gone,
        :class:`APIConflictError`/:class:`APIUnprocessableEntityError` if a
        JSON-patch ``test`` operation fails or the content is invalid.
        """
        ...

    async def delete_object(
            self,
            resource: references.Resource,
            *,
            namespace: references.Namespace,
            name: str,
            propagation_policy: Optional[str] = None,
    ) -> None:
        """Delete an object; an absent object is not an error (already deleted)."""
        ...


class ApiClient(ResourceScanner, ObjectReader, ObjectWatcher, ObjectWriter, Protocol):
    """Everything the framework needs from a Kubernetes API client."""

    async def close(self) -> None:
        """Release the connections; the client is not usable afterwards."""
        ...


class ClientDriver(Protocol):
    """
    An installable API client implementation: what the ``kopf.clients`` entry
    point refers to, and what ``kopf.operator(client=...)`` accepts.
    """

    def create_client(
            self,
            *,
            vault: credentials.Vault,
            settings: configuration.OperatorSettings,
    ) -> ApiClient:
        """Make a client that takes its credentials from the vault for each request."""
        ...

    def default_login_fns(self) -> Sequence[Any]:
        """
        Login functions used when the operator declares no ``@kopf.on.login``
        handler of its own (e.g. kubeconfig, service account). Each is called
        with the usual activity kwargs and returns a :class:`ConnectionInfo`
        or ``None`` if its method does not apply here.
        """
        ...
