"""
Server-side selection of the watched objects: the selectors of ``settings.watching``.

The label and field selectors of all the settings' keys that match a resource
are joined with commas (an "and" for the API server); of the shard selectors,
the first matching one is used. All of them go to the API server with both the
listing and the watching requests, unmodified; the API server refuses the
invalid ones.

An API server without sharded lists and watches (Kubernetes before 1.36, or
without the ``ShardedListAndWatch`` feature gate) ignores the shard selector.
It says so by not echoing it in a list's ``metadata.shardInfo``; the objects
outside of the shard are then dropped here, by the same hash as the server's
(see :mod:`kopf._cogs.structs.shards`), so that several operators with
complementary shards split the objects the same way on any server. (1.37.2
with the gate filters custom resources but does not echo the selector in their
lists: their objects are checked here too, and none is dropped.)
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Mapping, Optional

from kopf._cogs.configs import configuration
from kopf._cogs.structs import references, shards

logger = logging.getLogger('kopf.reactor.watching')


@dataclasses.dataclass(frozen=True)
class Query:
    """The selectors of one resource's lists and watches (``None`` for none)."""
    label_selector: Optional[str] = None
    field_selector: Optional[str] = None
    shard_selector: Optional[str] = None


def make_query(settings: configuration.OperatorSettings, resource: references.Resource) -> Query:
    watching = settings.watching
    # Deduplicated and sorted: the same request for the same settings however they were declared.
    labels = ','.join(sorted(set(watching.label_selectors.collect(resource))))
    fields = ','.join(sorted(set(watching.field_selectors.collect(resource))))
    shard = next(iter(watching.shard_selectors.collect(resource)), '')
    return Query(label_selector=labels or None, field_selector=fields or None, shard_selector=shard or None)


class ShardFilter:
    """
    Drop the objects outside of the shard, unless the API server has done it already.

    The server's confirmation (the echoed ``shardInfo`` of a list) holds for the
    watch that continues from that list; a streaming list has no such echo, so
    its objects are always checked (an object inside the shard passes both ways).
    """

    def __init__(self, selector: Optional[str], *, resource: references.Resource) -> None:
        self._selector = selector
        self._resource = resource
        self._parsed: Optional[shards.ShardSelector] = None
        self._confirmed = False
        self._said = False

    def confirm(self, applied: Optional[str]) -> None:
        """Note whether the server has filtered the list (``applied`` is its echo of the selector)."""
        self._confirmed = self._selector is not None and applied is not None

    def unconfirm(self) -> None:
        """A request without the server's confirmation starts (e.g. a streaming list)."""
        self._confirmed = False

    def keeps(self, body: Mapping[str, Any]) -> bool:
        if self._selector is None or self._confirmed:
            return True
        if self._parsed is None:
            self._parsed = shards.parse(self._selector)  # a ShardSelectorError says what is wrong with it
        if not self._said:
            self._said = True
            logger.debug(f"The API server does not filter {self._resource!r} by shards (no shardInfo): "
                         f"filtering by {self._selector!r} on the operator's side.")
        return self._parsed.matches(body)
