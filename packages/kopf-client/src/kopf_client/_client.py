"""
The aiohttp implementation of the framework's API client protocol.

This is a thin mapping of the protocol's methods to Kubernetes REST calls;
the sending, retrying and authentication are in the transport, the discovery
and the watching have their own modules. All errors are those of
:mod:`kopf.clients`, so the framework never sees aiohttp's exceptions other
than for network errors that outlived the retries.
"""
from __future__ import annotations

import asyncio
import functools
from typing import Any, AsyncIterator, Collection, Iterable, Mapping, Optional, Sequence, Union

import kopf
from kopf import clients
from kopf_client import _discovery, _listing, _retrying, _transport, _watching


class AiohttpClient:
    """
    A Kubernetes API client over aiohttp, taking credentials from the vault per request.

    ``sleep`` is how it waits between retries: injectable for tests and for
    tools with their own clock.
    """

    def __init__(
            self,
            *,
            vault: clients.Vault,
            settings: kopf.OperatorSettings,
            sleep: _retrying.SleepFn = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self._transport = _transport.Transport(vault=vault, settings=settings, sleep=sleep)

    async def __aenter__(self) -> AiohttpClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._transport.close()

    async def scan_resources(
            self,
            *,
            groups: Optional[Collection[str]] = None,
    ) -> Collection[clients.Resource]:
        return await _discovery.scan_resources(self._transport, groups=groups)

    async def get_object(
            self,
            resource: clients.Resource,
            *,
            namespace: clients.Namespace,
            name: str,
    ) -> clients.RawBody:
        path = resource.get_url(namespace=namespace, name=name)
        body: clients.RawBody = await self._transport.request('GET', path)
        return body

    async def list_objects(
            self,
            resource: clients.Resource,
            *,
            namespace: clients.Namespace,
            limit: Optional[int] = None,
            continue_token: Optional[str] = None,
            label_selector: Optional[str] = None,
            field_selector: Optional[str] = None,
            shard_selector: Optional[str] = None,
    ) -> clients.ObjectPage:
        params = _watching.make_selector_params(label_selector=label_selector, field_selector=field_selector,
                                                shard_selector=shard_selector)
        if limit is not None:
            params['limit'] = str(limit)
        if continue_token is not None:
            params['continue'] = continue_token
        path = resource.get_url(namespace=namespace)
        # Read in chunks, the items kept as texts and decoded as taken: never all objects parsed at once.
        listing: Optional[_listing.Listing] = await self._transport.request('GET', path, params=params,
                                                                             reader=_listing.read_listing)
        if listing is None:  # an empty body
            listing = _listing.Listing({}, _listing.LazyItems([]))
        head = listing.head
        metadata: Mapping[str, Any] = head.get('metadata') or {}
        shard_info: Mapping[str, Any] = metadata.get('shardInfo') or {}
        return clients.ObjectPage(
            items=listing.map(functools.partial(_complete_item, resource=resource, listing=head)),
            resource_version=str(metadata.get('resourceVersion') or ''),
            continue_token=metadata.get('continue') or None,
            shard_selector=shard_info.get('selector') or None,
        )

    def watch_objects(
            self,
            resource: clients.Resource,
            *,
            namespace: clients.Namespace,
            resource_version: Optional[str] = None,
            timeout_seconds: Optional[float] = None,
            allow_bookmarks: bool = True,
            label_selector: Optional[str] = None,
            field_selector: Optional[str] = None,
            shard_selector: Optional[str] = None,
            send_initial_events: bool = False,
    ) -> AsyncIterator[clients.RawEvent]:
        return _watching.watch_objects(
            self._transport, self._settings, resource,
            namespace=namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
            label_selector=label_selector,
            field_selector=field_selector,
            shard_selector=shard_selector,
            send_initial_events=send_initial_events,
        )

    async def create_object(
            self,
            resource: clients.Resource,
            *,
            namespace: clients.Namespace,
            body: Mapping[str, Any],
            backoffs: Optional[Iterable[float]] = None,
    ) -> clients.RawBody:
        path = resource.get_url(namespace=namespace)
        created: clients.RawBody = await self._transport.request('POST', path, body=body, backoffs=backoffs)
        return created

    async def patch_object(
            self,
            resource: clients.Resource,
            *,
            namespace: clients.Namespace,
            name: str,
            patch: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
            patch_type: clients.PatchType = clients.PatchType.MERGE,
            subresource: Optional[str] = None,
    ) -> clients.RawBody:
        path = resource.get_url(namespace=namespace, name=name, subresource=subresource)
        body = dict(patch) if isinstance(patch, Mapping) else [dict(op) for op in patch]
        patched: clients.RawBody = await self._transport.request(
            'PATCH', path, body=body, content_type=clients.PatchType(patch_type).value)
        return patched

    async def delete_object(
            self,
            resource: clients.Resource,
            *,
            namespace: clients.Namespace,
            name: str,
            propagation_policy: Optional[str] = None,
    ) -> None:
        path = resource.get_url(namespace=namespace, name=name)
        params = {'propagationPolicy': propagation_policy} if propagation_policy else None
        try:
            await self._transport.request('DELETE', path, params=params)
        except clients.APINotFoundError:
            pass  # already deleted: the desired state is reached


def _complete_item(item: clients.RawBody, *, resource: clients.Resource, listing: Mapping[str, Any]) -> clients.RawBody:
    """
    Add ``apiVersion`` and ``kind`` to a listed object: the list API omits them per item.

    They are taken from the resource (the kind of the ``...List`` as a fallback),
    so that listed objects look the same as the watched ones to handlers.
    """
    list_kind = listing.get('kind')
    item_kind = resource.kind or (list_kind[:-4] if isinstance(list_kind, str) and list_kind.endswith('List') else None)
    header: clients.RawBody = {'apiVersion': listing.get('apiVersion') or resource.api_version}
    if item_kind is not None:
        header['kind'] = item_kind
    return {**header, **item}  # the item's own values, if any, win
