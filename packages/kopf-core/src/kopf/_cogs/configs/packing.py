"""
Fitting the diff-base into the object: the size limits, and the packed form for big objects.

The diff-base is the object's essence again, so a big object has a big one. Two
limits of Kubernetes apply to what is stored on an object:

* The annotations' total size: 256 KiB for all keys and values together
  (``TotalAnnotationSizeLimitB``); a patch that exceeds it is refused with
  ``metadata.annotations: Too long``. The progress records are annotations too,
  so some room is left for them (for the next changes' handlers).
* The object's size: etcd refuses requests over 1.5 MiB by default
  (``--max-request-bytes``), as ``etcdserver: request is too large`` (HTTP 500).
  So a 1 MiB spec and its 1 MiB diff-base cannot be stored together as they are.

The diff-base is stored in Kopf's format (compact JSON) whenever it fits. If it
does not, it is stored *packed* under a sibling key of its own: the same JSON,
gzip-compressed and base64-encoded, after a header with the format's version::

    kopf.zalando.org/last-handled-configuration-packed: "v1:gzip+base64:H4sIAAAAAAAC/+2d..."

The JSON of big specs is usually repetitive and shrinks many times. If even the
packed form does not fit, the diff-base is not stored (see :class:`Placement`).
Kopf does not know the packed form: it sees no diff-base there.
"""
from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import dataclasses
import enum
import gzip
import json
import logging
import zlib
from collections.abc import Mapping
from typing import Any, Dict, Iterator, List, Optional

from kopf._cogs.configs import boundedjson
from kopf._cogs.structs import dicts

ANNOTATIONS_SIZE_LIMIT = 256 * 1024
"""Kubernetes' limit of all annotations of an object: the keys' and values' bytes together."""

ANNOTATIONS_HEADROOM = 16 * 1024
"""What the diff-base leaves free in the annotations: the progress records of the next changes."""

OBJECT_SIZE_LIMIT = 1536 * 1024 - 64 * 1024
"""
How big the object may grow with its diff-base (its JSON): etcd's default limit of a request
(1.5 MiB), minus what the stored object has beyond its JSON, what the next changes add, a margin.
"""

PACKED_HEADER = 'v1:gzip+base64:'
"""The packed values start with it: the version of the format, then the encoding of the rest."""

PACKED_SUFFIX = '-packed'
"""The packed diff-base is stored under the plain one's key (or field) with this suffix."""

READ_BOUNDS = boundedjson.Bounds(size=8 * 1024 * 1024, containers=100_000, items=250_000, depth=200)
"""
What a diff-base on the object may be for it to be read (plain or unpacked); a bigger one is ignored.

Whoever may patch an object may write any diff-base, so it is measured before it is parsed:
a few KiB of a packed ``{},{},…`` would otherwise become millions of dicts. Any real one stays
below, since it is a part of an object that etcd has stored (1.5 MiB at most): the size is over
five times that (the ``\\uXXXX`` escapes of non-ASCII text make a text three times bigger at most);
a real object of 1.5 MiB has some 20,000-40,000 containers and 70,000-120,000 items (only the
lists of tiny values come near the bounds); Kubernetes objects are nested a few dozen levels, and
200 levels are still far from the stack's limit in the processing that follows (copying, diffing).

Within these bounds, the parsing is done on the event loop, at once: a thread would not help, as
``json.loads`` holds the GIL. It takes some 30 ms for a real diff-base of 1.4 MiB (as long as the
object's own parsing and copying take), and 0.2 s and 40 MiB at most for a forged one (250,000
distinct keys; measured on a busy machine of 2 cores), instead of seconds and 800 MiB.
"""


_UNPACKING_STEP = 256 * 1024  # bytes: how much is unpacked before it is counted


class Form(enum.Enum):
    """The forms in which the diff-base is (or is not) on the object."""
    PLAIN = 'plain'  # Kopf's format: compact JSON
    PACKED = 'packed'  # ours: gzip+base64 under a sibling key
    UNSTORED = 'unstored'  # too big even packed: not stored


def pack(plain: str) -> str:
    """The packed form of a plain (JSON) value; the same value always packs the same way."""
    compressed = gzip.compress(plain.encode('utf-8'), mtime=0)  # no timestamp: no needless patches
    return PACKED_HEADER + base64.b64encode(compressed).decode('ascii')


def unpack(value: Any) -> Optional[str]:
    """
    The plain value of a packed one; ``None`` if it is not packed by us (or is broken).

    Raises :class:`boundedjson.BoundExceededError` as soon as what is unpacked goes beyond
    what a diff-base may be (:data:`READ_BOUNDS`), without unpacking the rest.
    """
    if not isinstance(value, str) or not value.startswith(PACKED_HEADER):
        return None
    try:
        compressed = base64.b64decode(value[len(PACKED_HEADER):], validate=True)
        data = _decompress(compressed)
        return data.decode('utf-8') if data is not None else None
    except (binascii.Error, zlib.error, UnicodeDecodeError):
        return None


def _decompress(compressed: bytes) -> Optional[bytes]:
    """
    The gzip-decompressed data, in steps: each is counted, and the first excessive one stops it.

    A few KiB of a forged value may unpack into megabytes of ``{},{},…``: it is refused
    after its first ~100,000 containers (a step or two), not after its whole size.
    """
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # the gzip container
    tally = boundedjson.Tally(READ_BOUNDS)
    chunks: List[bytes] = []
    pending = compressed
    while not decompressor.eof:
        chunk = decompressor.decompress(pending, _UNPACKING_STEP)
        if not chunk and not decompressor.eof:
            return None  # truncated: no more input, and no end of the data
        if tally.size + len(chunk) > READ_BOUNDS.size:
            raise boundedjson.BoundExceededError(f"it unpacks into more than {format_size(READ_BOUNDS.size)}")
        tally.add(chunk)
        chunks.append(chunk)
        pending = decompressor.unconsumed_tail
    return b''.join(chunks)


def json_size(value: Any) -> int:
    """The bytes of a value as compact JSON: as the API server keeps it."""
    return len(json.dumps(value, separators=(',', ':'), ensure_ascii=False).encode('utf-8'))


def text_size(value: Any) -> int:
    return len(value.encode('utf-8')) if isinstance(value, str) else 0


def annotations_size(annotations: Mapping[str, Any]) -> int:
    """The size of the annotations as Kubernetes counts it: the keys and the values, in bytes."""
    return sum(text_size(key) + text_size(value) for key, value in annotations.items() if value is not None)


def merged_size(base: Any, patch: Any) -> int:
    """The size of ``base`` after the merge-``patch``, as compact JSON, without building it."""
    if not isinstance(patch, Mapping):
        return json_size(patch)
    base = base if isinstance(base, Mapping) else {}
    sizes = []
    for key in {**base, **patch}:
        if key in patch and patch[key] is None:
            continue
        value = merged_size(base.get(key), patch[key]) if key in patch else json_size(base[key])
        sizes.append(json_size(key) + 1 + value)
    return 2 + sum(sizes) + max(len(sizes) - 1, 0)


def overlay(patch: Mapping[str, Any], values: Mapping[dicts.FieldPath, Any]) -> Dict[str, Any]:
    """The patch with some more values, copied only along their paths (the patch stays as is)."""
    result = dict(patch)
    for path, value in values.items():
        node = result
        for key in path[:-1]:
            child = node.get(key)
            node[key] = dict(child) if isinstance(child, Mapping) else {}
            node = node[key]
        node[path[-1]] = value
    return result


ANNOTATIONS_ROOM = (f"the room in the annotations (256 KiB for all of them, "
                    f"{ANNOTATIONS_HEADROOM // 1024} KiB of it kept for the progress)")
OBJECT_ROOM = "the room in the object (1.4 MiB for all of it, under etcd's request limit of 1.5 MiB)"


@dataclasses.dataclass(frozen=True)
class Room:
    """How many bytes are left for the diff-base: in the annotations (if it goes there), and in the object."""
    annotations: Optional[int]
    object: int

    @classmethod
    def measure(cls, body: Mapping[str, Any], patch: Mapping[str, Any], *, annotations: bool) -> Room:
        """
        The room left after the patch, which has the diff-base's own places emptied.

        Measured once per storing, for all the forms that are tried: each is only
        added to what is left (the object's size takes a walk over all its JSON).
        """
        object_room = OBJECT_SIZE_LIMIT - merged_size(body, patch)
        if not annotations:
            return cls(annotations=None, object=object_room)
        merged = {**((body.get('metadata') or {}).get('annotations') or {}),
                  **((patch.get('metadata') or {}).get('annotations') or {})}
        annotations_room = ANNOTATIONS_SIZE_LIMIT - ANNOTATIONS_HEADROOM - annotations_size(merged)
        return cls(annotations=annotations_room, object=object_room)

    def excess(self, entries: Mapping[str, str]) -> Optional[str]:
        """The room that the new entries (key/field name: value) do not fit, if any; ``None`` if they fit."""
        if self.annotations is not None and annotations_size(entries) > self.annotations:
            return ANNOTATIONS_ROOM
        if sum(json_size(key) + json_size(value) + 2 for key, value in entries.items()) > self.object:
            return OBJECT_ROOM  # the 2 bytes are the colon and the comma
        return None


def format_size(size: int) -> str:
    if size >= 1024 * 1024:
        return f'{size / 1024 / 1024:.1f} MiB'
    if size >= 1024:
        return f'{size / 1024:.1f} KiB'
    return f'{size} bytes'


@dataclasses.dataclass(frozen=True)
class Placement:
    """
    Where a storage has put a diff-base that it could not store as Kopf does, and why.

    The storages report their placements while storing (see :func:`collecting`);
    the change cycle logs them once the patch is applied: the level says how much
    the users need to know. Kopf's format, as before, is not worth a line.
    """
    form: Form
    where: str  # e.g. "the annotation kopf.zalando.org/last-handled-configuration-packed"
    limit: str  # the limit that the plain form exceeds, with its size
    size: int  # the plain JSON's bytes
    packed_size: int  # the packed value's bytes (tried even if not stored)
    previous: Optional[Form]  # the form on the object before; None if it had no diff-base

    @property
    def level(self) -> Optional[int]:
        if self.form == Form.UNSTORED:
            return logging.WARNING
        if self.form == self.previous:
            return logging.DEBUG if self.form == Form.PACKED else None
        if self.form == Form.PLAIN and self.previous is None:
            return None  # as in Kopf
        return logging.INFO

    @property
    def message(self) -> str:
        size, packed_size = format_size(self.size), format_size(self.packed_size)
        if self.form == Form.PLAIN:
            return f"The last-handled configuration ({size}) fits again: it is stored as usual in {self.where}."
        if self.form == Form.PACKED:
            return (f"The last-handled configuration ({size}) exceeds {self.limit}: "
                    f"it is stored compressed ({packed_size}) in {self.where}.")
        after_restart = ("as changed since its last stored state" if self.previous is not None else
                         "as a new one (its creation handlers run again)")
        in_status = (", or store it in the status (kopf.StatusDiffBaseStorage), where only the object's size "
                     "limits it" if self.limit == ANNOTATIONS_ROOM else "")
        return (f"The last-handled configuration ({size}, {packed_size} compressed) exceeds {self.limit} "
                f"even compressed: it is not stored in {self.where}, only remembered until the operator exits; "
                f"after a restart, the object is handled {after_restart}. To fix it, exclude the big fields "
                f"from it (ignored_fields= of the diff-base storage){in_status}.")


_collected: contextvars.ContextVar[Optional[List[Placement]]] = contextvars.ContextVar('_collected', default=None)


@contextlib.contextmanager
def collecting() -> Iterator[List[Placement]]:
    """Collect the placements reported by the storages within the block (even by nested ones)."""
    placements: List[Placement] = []
    token = _collected.set(placements)
    try:
        yield placements
    finally:
        _collected.reset(token)


def report(placement: Placement) -> None:
    """Tell the collector (if any) where a diff-base is placed; with none, it is not told."""
    placements = _collected.get()
    if placements is not None:
        placements.append(placement)


@dataclasses.dataclass(frozen=True)
class Ignored:
    """
    A diff-base on the object that is not read, since it goes beyond :data:`READ_BOUNDS`.

    It is as good as none, as a broken one is (the object is handled as if it had
    none); but unlike a broken one, it is said aloud: it can only be forged.
    The storages report it while reading (see :func:`collecting_ignored`).
    """
    where: str  # e.g. "the annotation kopf.zalando.org/last-handled-configuration-packed"
    reason: str  # the bound that it goes beyond, e.g. "it has more than 100,000 containers ({} and [])"

    @property
    def message(self) -> str:
        return (f"The last-handled configuration in {self.where} is ignored: {self.reason}, "
                f"which no real one has; it may be forged by whoever can patch the object.")


_ignored: contextvars.ContextVar[Optional[List[Ignored]]] = contextvars.ContextVar('_ignored', default=None)


@contextlib.contextmanager
def collecting_ignored() -> Iterator[List[Ignored]]:
    """Collect the diff-bases that the storages ignore within the block (even nested ones)."""
    ignored: List[Ignored] = []
    token = _ignored.set(ignored)
    try:
        yield ignored
    finally:
        _ignored.reset(token)


def report_ignored(ignored: Ignored) -> None:
    """Tell the collector (if any) which diff-base is ignored and why; with none, it is not told."""
    collected = _ignored.get()
    if collected is not None:
        collected.append(ignored)
