"""
Naming conventions of the keys that the framework stores on the objects.

Annotation names are limited to 63 characters (after an optional DNS prefix
and a slash), and to a restricted set of characters. Handler ids are not:
they can be long (``parent/child/fn/spec.some.field``) and contain slashes.
So the ids are made safe and, if too long, cut and suffixed with a short hash.

Two generations of keys exist, and both are written by default, so that objects
can move between operators of either generation in both directions:

* **v1** (legacy) counted the prefix into the 63-character limit, though
  Kubernetes limits only the name part. Long keys were cut shorter than needed.
* **v2** counts only the name part, and hashes the key before it is made safe,
  so that ids differing only in the replaced characters do not collide.

Whatever is stored must be readable by upstream Kopf and vice versa: the keys
are formed byte for byte the same way, including the BLAKE2b-based suffixes.
"""
from __future__ import annotations

import base64
import hashlib
from collections.abc import MutableMapping
from typing import Any, Collection, Dict, List, Mapping, Optional, Tuple

from kopf._cogs.structs import bodies

_MAX_NAME_LENGTH = 63
_CUT_LENGTH = 56  # leaves room for the 7-character hash suffix: "-" plus 6 base64 chars.

# Kubernetes re-creates ReplicaSets of Deployments and copies the annotations of
# the Deployment's template into them; marking the keys prevents the state of
# a Deployment's handlers from leaking into its ReplicaSets (and vice versa).
_REPLICASET_MARK = '-ofDRS'


_FORMED_KEYS: Dict[Tuple[type, str, bool, str], Tuple[str, ...]] = {}  # per class: subclasses may form keys their way
_FORMED_KEYS_LIMIT = 10_000


class StorageKeyFormingConvention:
    """
    Forming the annotation keys from handler ids (or other keys) and a prefix.

    ``make_keys()`` returns the v2 key first, then the v1 key if it differs
    (and if v1 is enabled). Values are written to all the keys, and read from
    the first one that has a value.
    """

    def __init__(self, *args: Any, prefix: str, v1: bool, **kwargs: Any) -> None:
        if not prefix:
            raise ValueError("Annotations storages must be prefixed.")
        super().__init__(*args, **kwargs)
        self.prefix = prefix
        self.v1 = v1

    def make_keys(self, key: str, *, body: Optional[bodies.Body] = None) -> List[str]:
        # The keys are formed for every handler of every object in every cycle, always the same ones:
        # they are remembered per marked key (the only part that depends on the body).
        marked_key = self._mark_key(key, body=body)
        cache_key = (type(self), self.prefix, self.v1, marked_key)
        keys = _FORMED_KEYS.get(cache_key)
        if keys is None:
            v2_keys = [self.make_v2_key(marked_key)]
            v1_keys = [self.make_v1_key(marked_key)] if self.v1 else []
            keys = tuple(v2_keys + [k for k in v1_keys if k not in v2_keys])
            if len(_FORMED_KEYS) >= _FORMED_KEYS_LIMIT:  # e.g. sub-handlers with generated ids
                _FORMED_KEYS.clear()
            _FORMED_KEYS[cache_key] = keys
        return list(keys)

    def make_v2_key(self, key: str, *, body: Optional[bodies.Body] = None) -> str:
        marked_key = self._mark_key(key, body=body)
        safe_key = make_safe(marked_key)
        if len(marked_key) > _MAX_NAME_LENGTH:
            safe_key = safe_key[:_CUT_LENGTH] + make_suffix(marked_key)
        return f'{self.prefix}/{safe_key}'

    def make_v1_key(self, key: str, *, body: Optional[bodies.Body] = None) -> str:
        marked_key = self._mark_key(key, body=body)
        safe_key = make_safe(marked_key)
        full_prefix = f'{self.prefix}/'
        if len(safe_key) > _MAX_NAME_LENGTH - len(full_prefix):
            safe_key = safe_key[:_CUT_LENGTH - len(full_prefix)] + make_suffix(safe_key)
        return f'{full_prefix}{safe_key}'

    @staticmethod
    def make_safe_key(key: str) -> str:
        """The key with the characters not allowed in annotation names replaced (as in Kopf)."""
        return make_safe(key)

    def make_suffix(self, key: str) -> str:
        """The hash suffix of a key cut to the annotation names' length limit (as in Kopf)."""
        return make_suffix(key)

    def _mark_key(self, key: str, *, body: Optional[bodies.Body]) -> str:
        # Only the storages that mix in the marking convention mark their keys.
        if body is not None and isinstance(self, StorageKeyMarkingConvention):
            return self.mark_key(key, body=body)
        return key


class StorageKeyMarkingConvention:
    """
    Marking the keys of the objects that inherit annotations from their owners.

    Deployments' template annotations are copied to their ReplicaSets;
    the ReplicaSets' own keys get a suffix so that they are not confused.
    """

    def mark_key(self, key: str, *, body: bodies.Body) -> str:
        if body.get('kind') != 'ReplicaSet':  # the cheap check first: it runs for every key in every cycle
            return key
        owners = body.meta.get('ownerReferences') or []
        if any(owner.get('kind') == 'Deployment' for owner in owners):
            return f'{key}{_REPLICASET_MARK}'
        return key


class StorageStanzaCleaner:
    """
    Removing the stanzas left empty in the patches or the essences.

    An empty ``metadata: {annotations: {}}`` in a merge-patch does nothing to
    the object but still costs an API request; in an essence, it would differ
    from the same essence without it and would be seen as a change.
    """

    @staticmethod
    def remove_annotations(essence: MutableMapping[str, Any], keys_to_remove: Collection[str]) -> None:
        """Remove these annotations from an essence, in place (e.g. the storages' own ones)."""
        metadata = essence.get('metadata')
        if not isinstance(metadata, MutableMapping):
            return
        annotations = metadata.get('annotations')
        if isinstance(annotations, Mapping) and not set(keys_to_remove).isdisjoint(annotations):
            metadata['annotations'] = {key: value for key, value in annotations.items() if key not in keys_to_remove}

    def remove_empty_stanzas(self, d: MutableMapping[str, Any]) -> None:
        metadata = d.get('metadata')
        if isinstance(metadata, MutableMapping):
            for key in ('annotations', 'labels'):
                if key in metadata and not metadata[key]:
                    del metadata[key]
        for key in ('metadata', 'status'):
            if key in d and not d[key]:
                del d[key]


def make_safe(key: str) -> str:
    """Replace the characters that are not allowed in annotation names."""
    return key.replace('/', '.').replace('<', '_').replace('>', '_')


def make_suffix(key: str) -> str:
    """
    A short, stable hash suffix for the cut keys: ``-`` plus 6 base64 characters.

    BLAKE2b with its native 4-byte digest (not a truncated longer digest),
    base64-encoded with the URL-unsafe characters replaced by the safe ones.
    """
    digest = hashlib.blake2b(key.encode('utf-8'), digest_size=4).digest()
    alnum = base64.b64encode(digest, altchars=b'-.').decode('ascii')
    return f'-{alnum}'.rstrip('=-.')


def get_annotations(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The annotations of a raw body or a Body, empty if absent."""
    metadata = body.get('metadata') or {}
    annotations: Mapping[str, Any] = metadata.get('annotations') or {}
    return annotations
