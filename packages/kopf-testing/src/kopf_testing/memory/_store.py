"""
The state of the in-memory API: objects, resource versions, history, watchers.

It behaves as kube-apiserver does where operators can see it: one global
resourceVersion counter; no-op writes that change nothing (and notify no one);
optimistic concurrency on ``metadata.resourceVersion``; ``generation`` bumped
by changes outside of metadata (and of status, if it is a subresource);
finalizers holding a deleted object with its ``deletionTimestamp``; consistent
paginated lists from a snapshot; watches replaying the history since a
resourceVersion, or 410 Gone if that part of the history is compacted.

All methods are synchronous and thread-safe: the test and the operator under
test may run in different threads (and event loops). Watchers get their events
via their own loop's ``call_soon_threadsafe``, in the order of the changes.
"""
import asyncio
import copy
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Optional, Union

from kopf import clients
from kopf_testing.memory import _objects
from kopf_testing.memory._errors import fail, unsupported
from kopf_testing.memory._objects import Key, Object
from kopf_testing.memory._patching import json_patch, merge_patch
from kopf_testing.memory._resources import Served, builtin_resources, served_from_crd
from kopf_testing.memory._schema import apply_schema, find_unknown_fields
from kopf_testing.memory._selectors import (
    Matcher,
    parse_field_selector,
    parse_label_selector,
    parse_shard_selector,
    select,
)
from kopf_testing.memory._watches import Change, Watcher

_SYSTEM_NAMESPACES = ('default', 'kube-system', 'kube-public', 'kube-node-lease')
_CRDS = ('apiextensions.k8s.io', 'customresourcedefinitions')
_INITIAL_EVENTS_END = 'k8s.io/initial-events-end'


class MemoryApi:
    """
    A Kubernetes API in memory: what ``kopf_testing.memory.MemoryDriver`` serves to an operator.

    ``compact()`` forgets the history (as etcd's compaction does), so that the
    next watch or list continuation from an older resourceVersion gets 410 Gone.

    Two features depend on the Kubernetes version and its feature gates:
    ``streaming_lists`` (``sendInitialEvents``: on by default since 1.34; off, the
    watch request is refused with 422 as by a server with ``WatchList`` off) and
    ``sharded_watches`` (``shardSelector``: 1.36+ with ``ShardedListAndWatch``;
    off by default, the selector is ignored and lists have no ``shardInfo``).
    """

    def __init__(self, *, first_resource_version: int = 1000, streaming_lists: bool = True,
                 sharded_watches: bool = False) -> None:
        self.streaming_lists = streaming_lists
        self.sharded_watches = sharded_watches
        self._lock = threading.RLock()
        self._served: dict[tuple[str, str], Served] = {}
        self._objects: dict[Key, Object] = {}
        self._history: list[Change] = []
        self._watchers: list[Watcher] = []
        self._rv = first_resource_version
        self._oldest_watchable = first_resource_version
        for served in builtin_resources():
            self._serve(served)
        namespaces = self.served_by_name('namespaces')
        for name in _SYSTEM_NAMESPACES:
            self.create(namespaces.resource, None, {'apiVersion': 'v1', 'kind': 'Namespace',
                                                     'metadata': {'name': name}})

    # --- Resources ---

    def _serve(self, served: Served) -> None:
        self._served[served.resource.group, served.resource.plural] = served

    def scan(self, groups: Optional[Collection[str]] = None) -> list[clients.Resource]:
        with self._lock:
            return [s.resource for s in self._served.values() if groups is None or s.resource.group in groups]

    def served_for(self, resource: clients.Resource) -> Served:
        with self._lock:
            served = self._served.get((resource.group, resource.plural))
        if served is None or served.resource.version != resource.version:
            fail(404, 'the server could not find the requested resource')
        return served

    def served_by_name(self, name: str) -> Served:
        """By what kubectl accepts: ``plural``, ``plural.group``, ``kind``, ``singular``, or a short name."""
        with self._lock:
            for served in self._served.values():
                r = served.resource
                names = {r.plural, f'{r.plural}.{r.group}', (r.kind or '').lower(), r.singular or '', *r.shortcuts}
                if name.lower() in names or name == f'{r.plural}.{r.version}.{r.group}':
                    return served
        fail(404, f'the server does not have a resource type {name!r}')

    # --- Reading ---

    def get(self, resource: clients.Resource, namespace: Optional[str], name: str) -> Object:
        served = self.served_for(resource)
        with self._lock:
            return copy.deepcopy(self._require(served, namespace, name))

    def list(self, resource: clients.Resource, namespace: Optional[str], *, limit: Optional[int] = None,
             continue_token: Optional[str] = None, label_selector: Optional[str] = None,
             field_selector: Optional[str] = None,
             shard_selector: Optional[str] = None) -> tuple[list[Object], str, Optional[str]]:
        """The items of one page, the list's resourceVersion, the continue token (None if the last page)."""
        served = self.served_for(resource)
        matches = self._make_matcher(label_selector, field_selector, shard_selector)
        with self._lock:
            if namespace is not None and served.resource.namespaced is False:
                fail(404, 'the server could not find the requested resource')
            start: Optional[Key]
            if continue_token:
                snapshot_rv, start = _objects.parse_continue(continue_token, oldest=self._oldest_watchable)
            else:
                snapshot_rv, start = self._rv, None
            objects = self._snapshot(snapshot_rv)
            prefix = (served.resource.group, served.resource.plural)
            keys = sorted(key for key in objects if key[:2] == prefix and (namespace is None or key[2] == namespace)
                          and (start is None or key > start))
            matching = [key for key in keys if matches(objects[key])]
            page = matching[:limit] if limit else matching
            # As the API server: more pages if any objects follow the page's last one, selected or not
            # (it stops reading at the limit, so it does not know whether the rest would be selected).
            more = bool(limit) and len(page) == limit and page[-1] != keys[-1]
            token = _objects.make_continue(snapshot_rv, page[-1]) if more else None
            items = [copy.deepcopy(objects[key]) for key in page]  # with their kind, as kopf-client completes them
            return items, str(snapshot_rv), token

    def _make_matcher(self, label_selector: Optional[str], field_selector: Optional[str],
                      shard_selector: Optional[str]) -> Matcher:
        """The selectors of a request; the shard selector is ignored unless sharded watches are on."""
        shards = parse_shard_selector(shard_selector if self.sharded_watches else None)
        return select(parse_label_selector(label_selector), parse_field_selector(field_selector), shards)

    def _snapshot(self, resource_version: int) -> dict[Key, Object]:
        """The objects as they were at that resourceVersion: the current ones with later changes undone."""
        objects = dict(self._objects)
        for change in reversed(self._history):
            if change.resource_version <= resource_version:
                break
            if change.previous is None:
                objects.pop(change.key, None)
            else:
                objects[change.key] = change.previous
        return objects

    # --- Writing ---

    def create(self, resource: clients.Resource, namespace: Optional[str], body: Mapping[str, Any], *,
               strict: bool = False) -> Object:
        """Create the object; ``strict`` rejects unknown fields instead of pruning them (kubectl's default)."""
        served = self.served_for(resource)
        if strict:
            self._reject_unknown_fields(served, body)
        with self._lock:
            obj = _objects.prepare_new(served, namespace, copy.deepcopy(dict(body)),
                                      namespace_exists=('', 'namespaces', '', namespace or '') in self._objects)
            key = self._key(served, namespace, obj['metadata']['name'])
            if key in self._objects:
                fail(409, f'{_objects.describe(served)} "{key[3]}" already exists', reason='AlreadyExists',
                     name=key[3], group=served.resource.group, kind=served.resource.plural)
            if served.schema is not None:
                obj = apply_schema(obj, served.schema)
            if (served.resource.group, served.resource.plural) == _CRDS:
                new_served = served_from_crd(obj)  # refused before anything is stored, if unsupported
                _objects.accept_crd(obj)
            self._record('ADDED', key, obj, None)
            if (served.resource.group, served.resource.plural) == _CRDS:
                self._serve(new_served)
            return copy.deepcopy(obj)

    def patch(self, resource: clients.Resource, namespace: Optional[str], name: str,
              patch: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]], patch_type: clients.PatchType,
              subresource: Optional[str] = None) -> Object:
        served = self.served_for(resource)
        if subresource not in (None, 'status'):
            unsupported(f'the subresource {subresource!r}')
        if subresource == 'status' and not served.has_status:
            fail(404, 'the server could not find the requested resource')
        with self._lock:
            old = self._require(served, namespace, name)
            if patch_type == clients.PatchType.JSON:
                if not isinstance(patch, Sequence):
                    fail(400, 'json: cannot unmarshal object into Go value of type jsonpatch.Patch')
                new = json_patch(old, patch)
            else:
                if not isinstance(patch, Mapping):
                    fail(400, 'json: cannot unmarshal array into Go value of type map[string]interface {}')
                new = merge_patch(old, patch)
            return copy.deepcopy(self._update(served, old, new, subresource))

    def delete(self, resource: clients.Resource, namespace: Optional[str], name: str, *,
               propagation_policy: Optional[str] = None) -> Optional[Object]:
        """Delete now, or mark as deleted if finalizers hold it; return the object if it still exists."""
        served = self.served_for(resource)
        if (served.resource.group, served.resource.plural) in {('', 'namespaces'), _CRDS}:
            unsupported(f'deleting {served.resource.plural} (the real API server does it asynchronously, '
                        f'with the contents); use a new MemoryApi for a clean state')
        if propagation_policy not in (None, 'Background'):
            unsupported(f'the propagation policy {propagation_policy!r} (only Background, the default)')
        with self._lock:
            old = self._require(served, namespace, name)
            if not old['metadata'].get('finalizers'):
                self._remove(served, old)
                return None
            if 'deletionTimestamp' in old['metadata']:
                return copy.deepcopy(old)
            new = copy.deepcopy(old)
            new['metadata']['deletionTimestamp'] = _objects.now()
            new['metadata']['deletionGracePeriodSeconds'] = 0
            if served.has_generation:
                new['metadata']['generation'] = old['metadata'].get('generation', 0) + 1
            self._record('MODIFIED', self._key(served, namespace, name), new, old)
            return copy.deepcopy(new)

    @staticmethod
    def _reject_unknown_fields(served: Served, body: Mapping[str, Any]) -> None:
        unknown = find_unknown_fields(body, served.schema) if served.schema is not None else []
        if unknown:
            r = served.resource
            fail(400, f'{r.kind} in version "{r.version}" cannot be handled as a {r.kind}: '
                      f'strict decoding error: ' + ', '.join(f'unknown field "{path}"' for path in unknown))

    def compact(self) -> None:
        """Forget the history: older resourceVersions now get 410 Gone in watches and continued lists."""
        with self._lock:
            self._history.clear()
            self._oldest_watchable = self._rv

    # --- Watching ---

    def subscribe(self, resource: clients.Resource, namespace: Optional[str], resource_version: Optional[str],
                  loop: asyncio.AbstractEventLoop, queue: 'asyncio.Queue[clients.RawEvent]', *,
                  label_selector: Optional[str] = None, field_selector: Optional[str] = None,
                  shard_selector: Optional[str] = None, send_initial_events: bool = False) -> Watcher:
        """
        Start watching: the events since the resourceVersion are queued at once, then the new ones.

        With ``send_initial_events`` (a streaming list), the current objects are
        queued as ADDED, then a BOOKMARK annotated as the end of the initial events.
        """
        served = self.served_for(resource)
        if send_initial_events and not self.streaming_lists:
            fail(422, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
                      'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled')
        matches = self._make_matcher(label_selector, field_selector, shard_selector)
        with self._lock:
            watcher = Watcher(served, namespace, loop, queue, matches)
            since = None if send_initial_events else resource_version
            for event in self._events_since(watcher, since):
                queue.put_nowait(event)
            if send_initial_events:
                queue.put_nowait(self._bookmark(served, annotations={_INITIAL_EVENTS_END: 'true'}))
            self._watchers.append(watcher)
            return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        with self._lock:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def send_bookmark(self, watcher: Watcher) -> None:
        """Queue a BOOKMARK with the current resourceVersion, after all the events queued so far."""
        with self._lock:
            bookmark = self._bookmark(watcher.served)
            watcher.loop.call_soon_threadsafe(watcher.queue.put_nowait, bookmark)

    def _bookmark(self, served: Served, annotations: Optional[dict[str, str]] = None) -> clients.RawEvent:
        r = served.resource
        metadata: Object = {'resourceVersion': str(self._rv)}
        if annotations:
            metadata['annotations'] = annotations
        return {'type': 'BOOKMARK', 'object': {'kind': r.kind, 'apiVersion': r.api_version, 'metadata': metadata}}

    def _events_since(self, watcher: Watcher, resource_version: Optional[str]) -> Iterator[clients.RawEvent]:
        served, namespace = watcher.served, watcher.namespace
        if resource_version in (None, '', '0'):  # "any": the current state as ADDED, then the changes
            for key in sorted(self._objects):
                if self._is_watched(key, served, namespace) and watcher.matches(self._objects[key]):
                    yield {'type': 'ADDED', 'object': copy.deepcopy(self._objects[key])}
            return
        try:
            since = int(resource_version)
        except ValueError:
            fail(400, f'invalid resource version: {resource_version!r}')
        if since < self._oldest_watchable:
            fail(410, f'too old resource version: {since} ({self._oldest_watchable})', reason='Expired')
        for change in self._history:
            if change.resource_version > since and self._is_watched(change.key, served, namespace):
                if (event := watcher.event_for(change)) is not None:
                    yield event

    @staticmethod
    def _is_watched(key: Key, served: Served, namespace: Optional[str]) -> bool:
        return key[:2] == (served.resource.group, served.resource.plural) and namespace in (None, key[2])

    # --- Internals ---

    def _require(self, served: Served, namespace: Optional[str], name: str) -> Object:
        key = self._key(served, namespace, name)
        if key not in self._objects:
            fail(404, f'{_objects.describe(served)} "{name}" not found', name=name, group=served.resource.group,
                 kind=served.resource.plural)
        return self._objects[key]

    def _key(self, served: Served, namespace: Optional[str], name: str) -> Key:
        if served.resource.namespaced and namespace is None:
            unsupported(f'{served.resource.plural} without a namespace (they are namespaced)')
        if not served.resource.namespaced and namespace is not None:
            fail(404, 'the server could not find the requested resource')
        return served.resource.group, served.resource.plural, namespace or '', name

    def _update(self, served: Served, old: Object, new: Object, subresource: Optional[str]) -> Object:
        old_meta, new_meta = old['metadata'], new.setdefault('metadata', {})
        wanted_rv = new_meta.get('resourceVersion')
        if wanted_rv is not None and wanted_rv != old_meta['resourceVersion']:
            fail(409, f'Operation cannot be fulfilled on {_objects.describe(served)} "{old_meta["name"]}": the object '
                      f'has been modified; please apply your changes to the latest version and try again')
        if subresource == 'status':  # only the status changes; everything else stays as it was
            new = {**copy.deepcopy(old), 'status': new['status']} if 'status' in new else \
                {key: copy.deepcopy(value) for key, value in old.items() if key != 'status'}
        else:
            new = _objects.keep_what_the_server_owns(served, old, new)
        if served.schema is not None:
            new = apply_schema(new, served.schema)
        new_finalizers = set(new['metadata'].get('finalizers', [])) - set(old_meta.get('finalizers', []))
        if 'deletionTimestamp' in old_meta and new_finalizers:
            fail(422, f'{served.resource.kind}.{served.resource.group} "{old_meta["name"]}" is invalid: '
                      f'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted')
        if served.has_generation and _objects.spec_of(new, served) != _objects.spec_of(old, served):
            new['metadata']['generation'] = old_meta.get('generation', 0) + 1
        if new == old:
            return old  # a no-op: nothing is written, the resourceVersion stays, no one is notified
        key = self._key(served, old_meta.get('namespace'), old_meta['name'])
        if 'deletionTimestamp' in new['metadata'] and not new['metadata'].get('finalizers'):
            self._remove(served, new, previous=old)
        else:
            self._record('MODIFIED', key, new, old)
        return new

    def _remove(self, served: Served, obj: Object, *, previous: Optional[Object] = None) -> None:
        key = self._key(served, obj['metadata'].get('namespace'), obj['metadata']['name'])
        self._record('DELETED', key, copy.deepcopy(obj), previous or self._objects[key])
        self._collect_garbage(obj['metadata']['uid'])

    def _collect_garbage(self, owner_uid: str) -> None:
        """Delete the dependents whose owners are all gone (in kube-controller-manager, it is a bit later)."""
        uids = {obj['metadata']['uid'] for obj in self._objects.values()}
        for key, obj in list(self._objects.items()):
            owners = {ref.get('uid') for ref in obj['metadata'].get('ownerReferences', [])}
            if owner_uid in owners and not owners & uids and key in self._objects:
                served = self._served[key[0], key[1]]
                self.delete(served.resource, key[2] or None, key[3])

    def _record(self, type: str, key: Key, obj: Object, previous: Optional[Object]) -> None:
        self._rv += 1
        obj['metadata']['resourceVersion'] = str(self._rv)
        if type == 'DELETED':
            del self._objects[key]
        else:
            self._objects[key] = obj
        change = Change(self._rv, key, type, copy.deepcopy(obj), previous)
        self._history.append(change)
        for watcher in list(self._watchers):
            if self._is_watched(key, watcher.served, watcher.namespace):
                event = watcher.event_for(change)
                if event is None:
                    continue
                try:
                    watcher.loop.call_soon_threadsafe(watcher.queue.put_nowait, event)
                except RuntimeError:  # its event loop is closed: the watch is over
                    self._watchers.remove(watcher)
