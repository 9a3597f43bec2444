"""Checkpoints in a Zarr v3 store: one group per parameter version, published atomically.

```
checkpoints.zarr/
  zarr.json               root group; its attribute "fivectl_latest" is the pointer {"version", "manifest_digest"},
                          the file replaced atomically after each publish
  .staging/               groups being written; anything here is the leftover of a crashed save
  v00000010/              one group per version: attributes = the caller's JSON + a "fivectl_checkpoint" entry
    model/__pack0         sections are sub-groups; a section's arrays of one dtype lie end to end in one
    optimizer/__pack0     single-chunk zstd array, and the manifest gives each name's pack and offset
    ...
```

A save writes the whole group under ``.staging/``, fsyncs every file, then renames it to ``vNNNNNNNN`` (the
commit point) and replaces the root ``zarr.json`` holding the pointer. A kill at any moment leaves either the old set of versions or the old
set plus a complete new one. Each group carries a manifest (name, shape, dtype and BLAKE2 digest of every array,
plus the digest of the attributes) that ``load`` checks, so a truncated or corrupted version is detected and the
previous good one is used with a :class:`CheckpointFallbackWarning`. Nothing is pickled: arrays plus JSON.
A torch state dict or an RNG state becomes such arrays plus JSON in ``store.state_codec``; making the
staged files durable is ``store.fsync``.

Past versions kept only so that opponents can play them are *slimmed* (``slim``): their manifest is rewritten
without the optimizer and the other training sections, then those files go. A slimmed version still loads its
``model`` (and ``model_average``, the weights' moving average, when the run keeps one); a full load of it (a
resume) is refused or, for the newest-good search, skipped.

Packing matters for speed: a model plus its Adam moments is a few hundred small arrays, and zarr spends its time
per array (metadata, a file, a task), not per byte. Groups written before packing (format 1, one zarr array per
name) still load.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
import shutil
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fivectl import __version__
from fivectl.errors import BadInput, FivectlError, RunFailed
from fivectl.store.atomic import write_json_atomic
from fivectl.store.fsync import fsync_dir, fsync_tree

GROUP_FORMAT = 2  # 2: arrays packed per section and dtype; 1 (still read): one zarr array per name
ROOT_META = "zarr.json"
POINTER_ATTR = "fivectl_latest"
STAGING_DIR = ".staging"
RESERVED_ATTR = "fivectl_checkpoint"
PACK_PREFIX = "__pack"  # user names cannot start with "__", so packs never collide with them
PLAYABLE_SECTIONS = ("model", "model_average")  # what playing a version reads: slimming keeps these
_VERSION_RE = re.compile(r"^v(\d{8})$")
_ZARR_CONFIG = {"write_empty_chunks": True}  # every chunk on disk, so a missing file is always an error


class CheckpointFallbackWarning(UserWarning):
    """The newest checkpoint could not be read; an older one was loaded instead."""


@dataclass
class Checkpoint:
    version: int
    arrays: dict[str, dict[str, np.ndarray]]
    attrs: dict[str, Any]
    # versions newer than ``version`` that were skipped because they failed verification, with the reason
    skipped: list[tuple[int, str]] = field(default_factory=list)

    @property
    def fell_back(self) -> bool:
        return bool(self.skipped)


@dataclass
class CheckpointInfo:
    version: int
    path: Path
    bytes: int
    milestone: bool
    slim: bool = False  # only the playable sections are kept (an opponent-pool member, see ``slim``)


def version_dirname(version: int) -> str:
    return f"v{version:08d}"


def array_digest(a: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=16).hexdigest()


def json_digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class CheckpointStore:
    """A Zarr v3 checkpoint store at ``path`` (created on first save)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._known_slim: set[int] = set()  # versions this object has slimmed or seen slimmed

    # -- listing ------------------------------------------------------------------------------------
    def versions(self) -> list[int]:
        """Published versions, ascending (complete groups only; verification happens in ``load``)."""
        if not self.path.is_dir():
            return []
        found = []
        for entry in os.scandir(self.path):
            m = _VERSION_RE.match(entry.name)
            if m and entry.is_dir() and os.path.exists(os.path.join(entry.path, "zarr.json")):
                found.append(int(m.group(1)))
        return sorted(found)

    def latest(self) -> int | None:
        """The newest published version. A version renamed into place but whose pointer update was cut short
        by a crash is complete (it was fsynced before the rename), so it counts."""
        versions = self.versions()
        return versions[-1] if versions else None

    def pointer(self) -> dict[str, Any] | None:
        """The pointer (root group attribute ``fivectl_latest``), or None when missing or unreadable."""
        try:
            data = _read_group_attrs(self.path).get(POINTER_ATTR)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def info(self, milestone_every: int = 0) -> list[CheckpointInfo]:
        """Every published version with its size on disk, whether ``prune`` keeps it as a milestone and whether
        it was slimmed."""
        return [
            CheckpointInfo(
                v,
                self._vdir(v),
                _tree_bytes(self._vdir(v)),
                milestone=_is_milestone(v, milestone_every),
                slim=self._is_slim(v),
            )
            for v in self.versions()
        ]

    def _is_slim(self, version: int) -> bool:
        try:
            meta = _read_group_attrs(self._vdir(version)).get(RESERVED_ATTR, {})
        except (OSError, ValueError):
            return False
        return bool(meta.get("dropped_sections")) if isinstance(meta, dict) else False

    # -- saving -------------------------------------------------------------------------------------
    def save(self, version: int, arrays: dict[str, dict[str, np.ndarray]], attrs: dict[str, Any]) -> Path:
        """Write version ``version`` (replacing an existing group of that number) and publish it atomically.

        ``arrays``: section -> name -> array; ``attrs``: JSON (no NaN/inf). Raises ``RunFailed`` with a one-line
        message when the disk is full or not writable; the previously published versions are untouched.
        """
        _check_save_args(version, arrays, attrs)
        stage: Path | None = (
            self.path / STAGING_DIR / f"{version_dirname(version)}.{os.getpid()}.{secrets.token_hex(4)}"
        )
        try:
            self._ensure_root()
            self._stage(stage, version, arrays, attrs)
            manifest_digest = json_digest(_read_group_attrs(stage)[RESERVED_ATTR]["manifest"])
            self._publish(stage, version)
            stage = None
            self._write_pointer(version, manifest_digest)
        except OSError as e:
            if stage is not None:
                shutil.rmtree(stage, ignore_errors=True)
            where = e.filename or self.path
            raise RunFailed(
                f"cannot write checkpoint v{version} to {self.path}: {e.strerror or e} ({where})"
            ) from e
        return self._vdir(version)

    def _ensure_root(self) -> None:
        import zarr
        from zarr.storage import LocalStore

        self.path.mkdir(parents=True, exist_ok=True)
        if not (self.path / "zarr.json").exists():
            zarr.open_group(LocalStore(self.path), mode="a", zarr_format=3)
        staging = self.path / STAGING_DIR
        if not (staging / "zarr.json").exists():
            # a real (empty) group, so zarr tools walking the hierarchy do not trip over it
            zarr.open_group(LocalStore(staging), mode="a", zarr_format=3)

    def _stage(
        self, stage: Path, version: int, arrays: dict[str, dict[str, np.ndarray]], attrs: dict[str, Any]
    ) -> None:
        packs, manifest = _pack_sections(arrays)
        group_attrs = {
            **attrs,
            RESERVED_ATTR: {
                "format": GROUP_FORMAT,
                "version": version,
                "fivectl_version": __version__,
                "manifest": manifest,
                # digest of the JSON as it will read back (tuples become lists, keys strings)
                "attrs_digest": json_digest(json.loads(json.dumps(attrs))),
            },
        }
        _run_async(_write_group(stage, packs, group_attrs))
        fsync_tree(stage)

    def _publish(self, stage: Path, version: int) -> None:
        target = self._vdir(version)
        if target.exists():
            # a rename cannot replace a non-empty directory: move the old group aside first (a crash in between
            # leaves this version absent, never half-written)
            self._remove_dir(target)
        os.rename(stage, target)
        fsync_dir(self.path)

    def _write_pointer(self, version: int, manifest_digest: str) -> None:
        current = self.pointer()
        if current and isinstance(current.get("version"), int) and current["version"] > version:
            if self._vdir(current["version"]).exists():
                return  # a newer version is already published; do not move the pointer backwards
        self._set_pointer(
            {"version": version, "group": version_dirname(version), "manifest_digest": manifest_digest}
        )

    # -- loading ------------------------------------------------------------------------------------
    def load(self, version: int | None = None, sections: Iterable[str] | None = None) -> Checkpoint:
        """Load and verify ``version``, or the newest good version when None.

        With ``version=None`` a version that fails verification is skipped with a ``CheckpointFallbackWarning``
        and recorded in ``Checkpoint.skipped``; an explicit version that fails raises ``FivectlError``.
        ``sections`` limits reading (and verifying) to those sections, e.g. ``("model",)`` to play a version.
        """
        wanted = None if sections is None else set(sections)
        if version is not None:
            if version not in self.versions():
                have = ", ".join(str(v) for v in self.versions()) or "none"
                raise BadInput(f"{self.path}: no checkpoint version {version} (have: {have})")
            try:
                return self._load_verified(version, wanted)
            except SlimCheckpoint as e:
                raise BadInput(f"{self.path}: checkpoint v{version} {e}") from None
            except CorruptCheckpoint as e:
                raise FivectlError(f"{self.path}: checkpoint v{version} is corrupt: {e}") from None
        candidates = self.versions()
        if not candidates:
            raise BadInput(f"{self.path}: no checkpoint has been published yet")
        skipped: list[tuple[int, str]] = []
        for v in reversed(candidates):
            try:
                ckpt = self._load_verified(v, wanted)
            except CorruptCheckpoint as e:
                skipped.append((v, str(e)))
                continue
            if skipped:
                bad = ", ".join(f"v{s} ({why})" for s, why in skipped)
                warnings.warn(
                    f"{self.path}: skipped checkpoint(s) {bad}; loaded v{v}",
                    CheckpointFallbackWarning,
                    stacklevel=2,
                )
            ckpt.skipped = skipped
            return ckpt
        bad = "; ".join(f"v{s}: {why}" for s, why in skipped)
        raise FivectlError(f"{self.path}: every checkpoint is corrupt ({bad})")

    def load_attrs(self, version: int) -> dict[str, Any]:
        """The caller's attributes of one version, unverified and without reading arrays (for listings)."""
        try:
            attrs = _read_group_attrs(self._vdir(version))
        except (OSError, ValueError) as e:
            raise FivectlError(f"{self.path}: checkpoint v{version} is unreadable: {e}") from None
        attrs.pop(RESERVED_ATTR, None)
        return attrs

    def _load_verified(self, version: int, sections: set[str] | None = None) -> Checkpoint:
        vdir = self._vdir(version)
        try:
            raw = _read_group_attrs(vdir)
        except (OSError, ValueError) as e:
            raise CorruptCheckpoint(f"group metadata unreadable: {e}") from None
        meta = raw.pop(RESERVED_ATTR, None)
        if not isinstance(meta, dict) or not isinstance(meta.get("manifest"), dict):
            raise CorruptCheckpoint("no manifest")
        if json_digest(raw) != meta.get("attrs_digest"):
            raise CorruptCheckpoint("attributes do not match their digest")
        pointer = self.pointer()
        if (
            pointer
            and pointer.get("version") == version
            and pointer.get("manifest_digest") != json_digest(meta["manifest"])
        ):
            raise CorruptCheckpoint("manifest does not match the pointer")
        dropped = set(meta.get("dropped_sections", ()))
        missing = dropped if sections is None else dropped & sections
        if missing:
            raise SlimCheckpoint(
                f"keeps only its {', '.join(sorted(_sections_of(meta['manifest'])))} section "
                f"(an opponent-pool member slimmed to what players load); "
                f"{', '.join(sorted(missing))} were dropped"
            )
        manifest = {
            key: want
            for key, want in meta["manifest"].items()
            if sections is None or key.split("/", 1)[0] in sections
        }
        stored = sorted({_stored_key(key, want) for key, want in manifest.items()})
        try:
            loaded = _run_async(_read_group(vdir, stored))
        except CorruptCheckpoint:
            raise
        except Exception as e:  # noqa: BLE001 - zarr raises many kinds on damaged metadata or chunks
            raise CorruptCheckpoint(f"unreadable: {type(e).__name__}: {e}") from None
        arrays: dict[str, dict[str, np.ndarray]] = {}
        for key, want in manifest.items():
            section, name = key.split("/", 1)
            arrays.setdefault(section, {})[name] = _checked(key, _unpacked(key, want, loaded), want)
        return Checkpoint(version=version, arrays=arrays, attrs=raw)

    # -- housekeeping -------------------------------------------------------------------------------
    def milestones(self, milestone_every: int) -> list[int]:
        return [v for v in self.versions() if _is_milestone(v, milestone_every)]

    def prune(self, keep_last: int, milestone_every: int = 0, keep: Iterable[int] = ()) -> list[int]:
        """Delete all but the newest ``keep_last`` versions, multiples of ``milestone_every`` (0 = none) and the
        versions in ``keep`` (e.g. the opponent pool's). Returns the deleted versions. Each version disappears
        atomically (renamed away, then removed)."""
        if keep_last < 1:
            raise BadInput(f"keep_last must be >= 1, got {keep_last}")
        versions = self.versions()
        keep = set(versions[-keep_last:]) | set(self.milestones(milestone_every)) | set(keep)
        doomed = [v for v in versions if v not in keep]
        for v in doomed:
            self._remove_dir(self._vdir(v))
        return doomed

    def slim(self, version: int, keep_sections: Iterable[str] = PLAYABLE_SECTIONS) -> bool:
        """Drop every section of ``version`` but ``keep_sections``; returns whether files were removed.

        The manifest is rewritten first (one atomic replace of the group's ``zarr.json``), then the dropped
        sections' directories go: a kill in between leaves a version that loads its kept sections, plus files
        that the next call removes. The pointer's version (the newest) is never slimmed: it is the resume point.
        """
        keep = set(keep_sections)
        vdir = self._vdir(version)
        pointer = self.pointer()
        if pointer is not None and pointer.get("version") == version:
            raise BadInput(f"{self.path}: v{version} is the latest checkpoint; it cannot be slimmed")
        try:
            meta_path = vdir / ROOT_META
            group = json.loads(meta_path.read_text())
            meta = group["attributes"][RESERVED_ATTR]
            manifest = meta["manifest"]
        except FileNotFoundError:
            return False  # pruned meanwhile (slimming runs beside the trainer's prune)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise FivectlError(f"{self.path}: checkpoint v{version} is unreadable: {e}") from None
        drop = _sections_of(manifest) - keep
        if drop:
            meta["manifest"] = {k: w for k, w in manifest.items() if k.split("/", 1)[0] in keep}
            meta["dropped_sections"] = sorted(set(meta.get("dropped_sections", ())) | drop)
        # a kill between the manifest and the files leaves the files: any later call removes them
        leftovers = [vdir / s for s in meta.get("dropped_sections", ())]
        try:
            if drop:
                write_json_atomic(meta_path, group, make_parent=False)  # never recreate a pruned version
            leftovers = [d for d in leftovers if d.exists()]
            for section_dir in leftovers:
                self._remove_dir(section_dir)
        except FileNotFoundError:
            return False  # pruned meanwhile
        except OSError as e:
            raise RunFailed(f"cannot slim checkpoint v{version} in {self.path}: {e.strerror or e}") from e
        self._known_slim.add(version)
        return bool(leftovers)

    def slim_old(
        self, keep_last: int, milestone_every: int = 0, keep_sections: Iterable[str] = PLAYABLE_SECTIONS
    ) -> list[int]:
        """Slim every version but the newest ``keep_last`` and the milestones (run after ``prune``, the versions
        left outside the window are the opponent pool's). Returns the versions slimmed by this call."""
        versions = self.versions()
        full = set(versions[-keep_last:]) | set(self.milestones(milestone_every))
        slimmed = []
        for v in versions:
            if v in full or v in self._known_slim:
                continue
            if self.slim(v, keep_sections):
                slimmed.append(v)
        return slimmed

    def discard_after(self, version: int) -> list[int]:
        """Delete versions newer than ``version`` (on resume from an older one after a fallback), so they are
        rewritten rather than mixed with the resumed history."""
        doomed = [v for v in self.versions() if v > version]
        for v in doomed:
            self._remove_dir(self._vdir(v))
        if doomed:
            ptr = self.pointer()
            if ptr is None or ptr.get("version") in doomed:
                self._repoint(version)
        return doomed

    def delete_staging(self) -> int:
        """Remove leftovers of crashed saves (call when no save is running). Returns how many were removed."""
        staging = self.path / STAGING_DIR
        if not staging.is_dir():
            return 0
        removed = 0
        for entry in staging.iterdir():
            if entry.name == "zarr.json":
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed += 1
        return removed

    def _repoint(self, version: int) -> None:
        try:
            manifest = _read_group_attrs(self._vdir(version))[RESERVED_ATTR]["manifest"]
        except (OSError, ValueError, KeyError, TypeError):
            return
        self._set_pointer(
            {"version": version, "group": version_dirname(version), "manifest_digest": json_digest(manifest)}
        )

    def _set_pointer(self, pointer: dict[str, Any]) -> None:
        root = json.loads((self.path / ROOT_META).read_text())
        root.setdefault("attributes", {})[POINTER_ATTR] = pointer
        write_json_atomic(self.path / ROOT_META, root)

    def _remove_dir(self, target: Path) -> None:
        trash = self.path / STAGING_DIR / f"{target.name}.deleted.{secrets.token_hex(4)}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        os.rename(target, trash)
        fsync_dir(target.parent)
        shutil.rmtree(trash, ignore_errors=True)

    def _vdir(self, version: int) -> Path:
        return self.path / version_dirname(version)


class CorruptCheckpoint(Exception):
    """Internal: one version failed verification (``load`` falls back or turns it into a FivectlError)."""


class SlimCheckpoint(CorruptCheckpoint):
    """Internal: a slimmed version was asked for a section it dropped (``load`` falls back or says so)."""


def _sections_of(manifest: dict[str, Any]) -> set[str]:
    return {key.split("/", 1)[0] for key in manifest}


def _is_milestone(version: int, milestone_every: int) -> bool:
    return milestone_every > 0 and version % milestone_every == 0


def _check_save_args(version: int, arrays: dict, attrs: dict) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version < 10**8:
        raise BadInput(f"checkpoint version must be an integer in [0, 1e8), got {version!r}")
    if RESERVED_ATTR in attrs:
        raise BadInput(f"checkpoint attribute {RESERVED_ATTR!r} is reserved")
    try:
        json.dumps(attrs, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise BadInput(f"checkpoint attributes must be plain JSON without NaN/inf: {e}") from None
    for section, named in arrays.items():
        for name in (section, *named):
            if (
                not isinstance(name, str)
                or not name
                or name in (".", "..")
                or "/" in name
                or name.startswith("__")
            ):
                raise BadInput(
                    f"bad checkpoint array name {name!r} (no '/', not empty, not starting with '__')"
                )
        for name, value in named.items():
            if np.asarray(value).dtype.kind not in "biufc":
                raise BadInput(
                    f"checkpoint array {section}/{name}: dtype {np.asarray(value).dtype} not numeric"
                )


def _read_group_attrs(vdir: Path) -> dict[str, Any]:
    meta = json.loads((vdir / "zarr.json").read_text())
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    if not isinstance(attrs, dict):
        raise ValueError("group has no attributes")
    return attrs


def _pack_sections(
    arrays: dict[str, dict[str, np.ndarray]],
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
    """Each section's arrays laid end to end per dtype (``__pack0``, ``__pack1``, ...), and the manifest: every
    named array's shape, dtype, digest, pack and offset (in elements)."""
    packs: dict[str, dict[str, np.ndarray]] = {}
    manifest: dict[str, dict[str, Any]] = {}
    for section, named in arrays.items():
        by_dtype: dict[str, list[tuple[str, np.ndarray]]] = {}
        for name, value in named.items():
            a = np.asarray(value)
            by_dtype.setdefault(a.dtype.str, []).append((name, a))
        packs[section] = {}
        for i, members in enumerate(by_dtype.values()):
            pack, offset = f"{PACK_PREFIX}{i}", 0
            for name, a in members:
                manifest[f"{section}/{name}"] = {
                    "shape": list(a.shape),
                    "dtype": a.dtype.str,
                    "digest": array_digest(a),
                    "pack": pack,
                    "offset": offset,
                }
                offset += a.size
            packs[section][pack] = np.concatenate([a.reshape(-1) for _, a in members])
    return packs, manifest


def _stored_key(key: str, want: dict[str, Any]) -> str:
    """The zarr array holding manifest entry ``key``: its pack, or (format 1) the array itself."""
    if "pack" not in want:
        return key
    return f"{key.split('/', 1)[0]}/{want['pack']}"


def _unpacked(key: str, want: dict[str, Any], loaded: dict[str, np.ndarray]) -> np.ndarray:
    stored = loaded[_stored_key(key, want)]
    if "pack" not in want:
        return stored
    try:
        start = int(want["offset"])
        size = math.prod(int(n) for n in want["shape"])
    except (KeyError, TypeError, ValueError):
        raise CorruptCheckpoint(f"{key}: bad manifest entry") from None
    if stored.ndim != 1 or not 0 <= start <= stored.size - size:
        raise CorruptCheckpoint(f"{key}: outside its pack ({want['pack']}, {stored.size} elements)")
    return stored[start : start + size].reshape(want["shape"])


def _checked(key: str, a: np.ndarray, want: dict[str, Any]) -> np.ndarray:
    if list(a.shape) != want["shape"] or a.dtype.str != want["dtype"]:
        raise CorruptCheckpoint(f"{key}: shape/dtype {a.shape} {a.dtype.str} != manifest")
    if array_digest(a) != want["digest"]:
        raise CorruptCheckpoint(f"{key}: checksum mismatch")
    return a


# Zarr's async API lets the per-array metadata and chunk I/O of a group overlap: with a few hundred small arrays
# (a state dict plus Adam moments) that is most of the time of a save or a load.


def _run_async(coro: Any) -> Any:
    from fivectl.store.io_loop import run_coroutine

    return run_coroutine(coro)


async def _write_group(stage: Path, arrays: dict[str, dict[str, np.ndarray]], attrs: dict[str, Any]) -> None:
    import asyncio

    from zarr.api.asynchronous import open_group
    from zarr.storage import LocalStore

    group = await open_group(store=LocalStore(stage), mode="w", zarr_format=3)

    async def write_one(sub: Any, name: str, value: np.ndarray) -> None:
        a = np.asarray(value)
        chunks = tuple(max(1, n) for n in a.shape)
        z = await sub.create_array(name, shape=a.shape, dtype=a.dtype, chunks=chunks, config=_ZARR_CONFIG)
        if a.size:
            await z.setitem(Ellipsis, a)

    subs = {section: await group.create_group(section) for section in arrays}
    await asyncio.gather(
        *(write_one(subs[section], name, a) for section, named in arrays.items() for name, a in named.items())
    )
    await group.update_attributes(attrs)


async def _read_group(vdir: Path, keys: list[str]) -> dict[str, np.ndarray]:
    import asyncio

    from zarr.api.asynchronous import open_array
    from zarr.storage import LocalStore

    store = LocalStore(vdir, read_only=True)

    async def read_one(key: str) -> np.ndarray:
        try:
            z = await open_array(store=store, path=key, mode="r", zarr_format=3)
            return np.asarray(await z.getitem(Ellipsis)) if z.size else np.zeros(z.shape, dtype=z.dtype)
        except Exception as e:  # noqa: BLE001 - a truncated chunk surfaces as a codec, key or value error
            raise CorruptCheckpoint(f"{key}: unreadable ({type(e).__name__}: {e})") from None

    values = await asyncio.gather(*(read_one(k) for k in keys))
    return dict(zip(keys, values, strict=True))


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for fn in filenames:
            try:
                total += os.path.getsize(os.path.join(dirpath, fn))
            except OSError:
                pass
    return total


__all__ = [
    "Checkpoint",
    "CheckpointFallbackWarning",
    "CheckpointInfo",
    "CheckpointStore",
]
