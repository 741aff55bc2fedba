"""
Remembering what the object cannot keep: the storages' writes that did not land.

A storage can lose what is written to it: e.g., a status whose schema lacks
``x-kubernetes-preserve-unknown-fields`` is pruned by the API server, so the
progress in ``status.kopf.progress`` and the diff-base in
``status.kopf.last-handled-configuration`` vanish as soon as they are patched.
Taken as "nothing stored", this would make every cycle start from scratch: the
finished handlers would run again and again, the retries would never count (so
the ``retries=`` limits would never stop them), and every change would look like
a creation — an endless loop.

So the storages are wrapped for each cycle: whatever is written is noted, and
once the patch is applied, whatever the patched object does not have is kept in
the object's memory (:class:`LostState`) and read from there. This does not
survive a restart — nothing can, with such a storage — but it keeps one operator
process correct until the CRD is fixed. Whatever the storage does keep always
has precedence over the memory. The pruning itself is reported (once) where the
patch is applied.

The same goes for a diff-base that is too big to be stored even packed (see
``configs.packing``), or whose patch is refused: the object keeps an older one
(or none), which is then known to be stale and is read from memory instead,
until a newer one is stored. Where the storages have put a big diff-base is
logged here, once the patch is applied (the storages have no logger); so is a
diff-base that they ignore when reading it, as beyond the bounds of a real one.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Optional

from kopf._cogs.configs import diffbase, packing, progress
from kopf._cogs.helpers import typedefs
from kopf._cogs.structs import bodies, dicts, patches


@dataclasses.dataclass
class LostState:
    """What the storages have failed to keep on one object: kept in its memory instead."""
    progress: Dict[str, progress.ProgressRecord] = dataclasses.field(default_factory=dict)
    essence: Optional[bodies.BodyEssence] = None
    stale: Optional[bodies.BodyEssence] = None  # what the storage had kept instead of the essence


class RememberingProgressStorage(progress.ProgressStorage):
    """The configured progress storage, plus the records that it has failed to keep."""

    def __init__(self, storage: progress.ProgressStorage, lost: LostState) -> None:
        super().__init__()
        self.storage = storage
        self.lost = lost
        self._written: Dict[str, Optional[progress.ProgressRecord]] = {}  # None for the purged ones

    def fetch(self, *, key: str, body: bodies.Body) -> Optional[progress.ProgressRecord]:
        record = self.storage.fetch(key=key, body=body)
        return record if record is not None else self.lost.progress.get(key)

    def store(self, *, key: str, record: progress.ProgressRecord, body: bodies.Body, patch: patches.Patch) -> None:
        self.storage.store(key=key, record=record, body=body, patch=patch)
        self._written[key] = record

    def purge(self, *, key: str, body: bodies.Body, patch: patches.Patch) -> None:
        self.storage.purge(key=key, body=body, patch=patch)
        self._written[key] = None

    def touch(self, *, body: bodies.Body, patch: patches.Patch, value: Optional[str]) -> None:
        self.storage.touch(body=body, patch=patch, value=value)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        return self.storage.clear(essence=essence)

    def flush(self) -> None:
        self.storage.flush()

    def verify(self, body: Optional[bodies.Body]) -> bool:
        """
        Remember the records written in this cycle that the patched object does not have.

        ``body`` is the object as the API has returned it after the patch, or ``None``
        if nothing was patched: then, only the records already known to be lost are
        updated, since their storage has evidently not kept them before either.
        Returns whether any record is newly found to be lost.
        """
        newly_lost = False
        lost = self.lost.progress
        for key, record in self._written.items():
            if record is None:
                lost.pop(key, None)
            elif body is None:
                if key in lost:
                    lost[key] = record
            elif self.storage.fetch(key=key, body=body) is None:
                newly_lost = newly_lost or key not in lost
                lost[key] = record
            else:
                lost.pop(key, None)
        self._written.clear()
        return newly_lost


class RememberingDiffBaseStorage(diffbase.DiffBaseStorage):
    """The configured diff-base storage, plus the essence that it has failed to keep."""

    def __init__(
            self,
            storage: diffbase.DiffBaseStorage,
            lost: LostState,
            *,
            logger: Optional[typedefs.Logger] = None,
    ) -> None:
        super().__init__()
        self.storage = storage
        self.lost = lost
        self.logger = logger
        self._written: Optional[bodies.BodyEssence] = None
        self._written_to: Optional[bodies.Body] = None
        self._placements: List[packing.Placement] = []

    def build(
            self,
            *,
            body: bodies.Body,
            extra_fields: Optional[Iterable[dicts.FieldSpec]] = None,
    ) -> bodies.BodyEssence:
        return self.storage.build(body=body, extra_fields=extra_fields)

    def clear(self, *, essence: bodies.BodyEssence) -> bodies.BodyEssence:
        return self.storage.clear(essence=essence)

    def fetch(self, *, body: bodies.Body) -> Optional[bodies.BodyEssence]:
        with packing.collecting_ignored() as ignored:
            essence = self.storage.fetch(body=body)
        # The storage still has what it had when it failed to keep ours: ours is newer.
        if self.lost.essence is not None and essence == self.lost.stale:
            essence = dicts.copy_tree(self.lost.essence)
        for item in ignored:
            if self.logger is not None:
                consequence = " The object is handled as if it had none." if essence is None else ""
                self.logger.warning(item.message + consequence)
        return essence

    def store(self, *, body: bodies.Body, patch: patches.Patch, essence: bodies.BodyEssence) -> None:
        with packing.collecting() as placements:
            self.storage.store(body=body, patch=patch, essence=essence)
        self._placements = placements
        self._written = dicts.copy_tree(essence)
        self._written_to = body

    def verify(self, body: Optional[bodies.Body]) -> bool:
        """
        Remember the essence written in this cycle if the patched object does not have it.

        ``body`` is the object as the API has returned it after the patch, or ``None``
        if nothing was patched (nothing to patch, or the patch was refused, or the object
        is gone): then, the object is as it was when the essence was written.
        Returns whether the essence is newly found to be lost.
        """
        written, self._written = self._written, None
        placements, self._placements = self._placements, []
        if written is None:
            return False
        kept = self.storage.fetch(body=body if body is not None else self._written_to or bodies.Body({}))
        self._written_to = None
        self._log(placements, kept=kept == written)
        if kept == written:
            self.lost.essence = self.lost.stale = None
            return False
        newly_lost = self.lost.essence is None
        self.lost.essence, self.lost.stale = written, kept
        return newly_lost

    def _log(self, placements: List[packing.Placement], *, kept: bool) -> None:
        """Say where a big diff-base has gone: only if it is there (or it is nowhere, as planned)."""
        for placement in placements:
            level = placement.level
            if self.logger is not None and level is not None and (kept or placement.form == packing.Form.UNSTORED):
                self.logger.log(level, placement.message)
