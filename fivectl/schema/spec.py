"""Versioned observation schemas: the data file that defines what the model sees (paper appendix E).

A schema (``schemas/obs/vN.toml``) is the ordered list of feature groups and their fields, plus the action
space. The encoder fills arrays for a schema version; the model builds its input layers from it; checkpoints
and rollouts record it. Column positions are derived from field order, so a new version that appends or
reorders fields can be mapped column by column (``surgery add-obs``).

Encoded observation layout, per agent (leading batch dims omitted), for each group ``g``:

- ``g.float``: float32 ``[F]`` (vector), ``[count, F]`` (unitset) or ``[H, W, F]`` (grid): all float and bool
  fields, flattened in field order (a field of shape ``[k]`` takes k columns);
- ``g.cat``: int32 ``[C]`` / ``[count, C]``: categorical fields in field order (only if the group has any);
- ``g.mask``: bool ``[count]`` for unitsets: which slots hold an observed unit.

plus ``action_mask`` bool ``[n_primary]``, ``target_mask`` bool ``[n_primary, n_targets]`` (the target slots
are the slots of the targetable unitsets concatenated in schema order) and ``param_mask`` bool
``[n_primary, 2]`` (does the action use a unit target / an offset; masked parameters get no gradient).
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

from fivectl.errors import BadInput

FIELD_KINDS = ("float", "bool", "categorical")
GROUP_KINDS = ("vector", "unitset", "grid")
NORMS = ("running", "none")
TARGET_TYPES = ("none", "point", "unit", "unit_offset", "dynamic")
"""``dynamic``: the target type depends on the hero (ability slots); the encoder's ``param_mask`` says which."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str = "float"
    shape: tuple[int, ...] = ()
    vocab: int = 0
    norm: str = "running"
    retired: bool = False
    constant: float = 0.0
    doc: str = ""

    @property
    def width(self) -> int:
        return int(math.prod(self.shape)) if self.shape else 1

    @property
    def is_float(self) -> bool:
        return self.kind in ("float", "bool")


@dataclass(frozen=True)
class Group:
    name: str
    kind: str
    fields: tuple[Field, ...]
    count: int = 1
    size: tuple[int, int] = (0, 0)
    targetable: bool = False
    doc: str = ""

    @cached_property
    def float_fields(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.is_float)

    @cached_property
    def cat_fields(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.kind == "categorical")

    @property
    def n_float(self) -> int:
        return sum(f.width for f in self.float_fields)

    @property
    def n_cat(self) -> int:
        return sum(f.width for f in self.cat_fields)

    def float_columns(self) -> dict[str, slice]:
        """Field name -> its columns in ``g.float``."""
        out, start = {}, 0
        for f in self.float_fields:
            out[f.name] = slice(start, start + f.width)
            start += f.width
        return out

    def cat_columns(self) -> dict[str, slice]:
        out, start = {}, 0
        for f in self.cat_fields:
            out[f.name] = slice(start, start + f.width)
            start += f.width
        return out

    def item_shape(self) -> tuple[int, ...]:
        if self.kind == "unitset":
            return (self.count,)
        if self.kind == "grid":
            return tuple(self.size)
        return ()


@dataclass(frozen=True)
class ActionSpec:
    primary: tuple[str, ...]
    target_type: tuple[str, ...]
    delays: int = 4
    offset_grid: int = 9

    @property
    def n_primary(self) -> int:
        return len(self.primary)

    @property
    def n_offset(self) -> int:
        return self.offset_grid * self.offset_grid


@dataclass(frozen=True)
class ObsSchema:
    version: int
    groups: tuple[Group, ...]
    action: ActionSpec
    description: str = ""
    frame: str = "world"
    """``world``: every team sees world coordinates; ``team``: team 1 sees (and moves in) the map reflected so that
    it looks like team 0's (``schema/frame.py``)."""

    def group(self, name: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(f"schema v{self.version} has no group {name!r}")

    @property
    def target_groups(self) -> tuple[Group, ...]:
        return tuple(g for g in self.groups if g.kind == "unitset" and g.targetable)

    @property
    def n_targets(self) -> int:
        return sum(g.count for g in self.target_groups)

    def target_offsets(self) -> dict[str, int]:
        """Group name -> index of its first slot in the concatenated target list."""
        out, start = {}, 0
        for g in self.target_groups:
            out[g.name] = start
            start += g.count
        return out

    def array_specs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """Key -> (per-agent shape, dtype) of every encoded array."""
        specs: dict[str, tuple[tuple[int, ...], str]] = {}
        for g in self.groups:
            lead = g.item_shape()
            specs[f"{g.name}.float"] = ((*lead, g.n_float), "float32")
            if g.n_cat:
                specs[f"{g.name}.cat"] = ((*lead, g.n_cat), "int32")
            if g.kind == "unitset":
                specs[f"{g.name}.mask"] = ((g.count,), "bool")
        specs["action_mask"] = ((self.action.n_primary,), "bool")
        specs["target_mask"] = ((self.action.n_primary, self.n_targets), "bool")
        # [:, 0] the primary action uses a unit target, [:, 1] it uses the 9x9 offset (delay is always used).
        specs["param_mask"] = ((self.action.n_primary, 2), "bool")
        return specs

    def to_json(self) -> str:
        return json.dumps(schema_to_dict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ObsSchema:
        return schema_from_dict(json.loads(text), source="<json>")


def schema_to_dict(s: ObsSchema) -> dict:
    d = asdict(s)
    return d


def schema_from_dict(d: dict, source: str) -> ObsSchema:
    """Parse and check a schema dict (from TOML or JSON); every error is reported at once."""
    errors: list[str] = []
    version = d.get("version")
    if not isinstance(version, int) or version < 1:
        errors.append(f"version: expected a positive integer, got {version!r}")
    groups = []
    seen = set()
    for gi, gd in enumerate(d.get("groups", [])):
        gname = gd.get("name", f"groups[{gi}]")
        if gname in seen:
            errors.append(f"groups.{gname}: duplicate group name")
        seen.add(gname)
        kind = gd.get("kind")
        if kind not in GROUP_KINDS:
            errors.append(f"groups.{gname}.kind: must be one of {', '.join(GROUP_KINDS)}, got {kind!r}")
        fields = []
        fseen = set()
        for fd in gd.get("fields", []):
            fname = fd.get("name", "?")
            if fname in fseen:
                errors.append(f"groups.{gname}.{fname}: duplicate field name")
            fseen.add(fname)
            fkind = fd.get("kind", "float")
            if fkind not in FIELD_KINDS:
                errors.append(
                    f"groups.{gname}.{fname}.kind: must be one of {', '.join(FIELD_KINDS)}, got {fkind!r}"
                )
            norm = fd.get("norm", "running" if fkind == "float" else "none")
            if norm not in NORMS:
                errors.append(f"groups.{gname}.{fname}.norm: must be one of {', '.join(NORMS)}, got {norm!r}")
            vocab = int(fd.get("vocab", 0))
            if fkind == "categorical" and vocab < 1:
                errors.append(f"groups.{gname}.{fname}.vocab: categorical fields need vocab >= 1")
            fields.append(
                Field(
                    name=fname,
                    kind=fkind,
                    shape=tuple(int(x) for x in fd.get("shape", ())),
                    vocab=vocab,
                    norm=norm,
                    retired=bool(fd.get("retired", False)),
                    constant=float(fd.get("constant", 0.0)),
                    doc=str(fd.get("doc", "")),
                )
            )
        if kind == "grid" and any(f.kind == "categorical" for f in fields):
            errors.append(f"groups.{gname}: grid groups hold float/bool channels only")
        groups.append(
            Group(
                name=gname,
                kind=kind or "vector",
                fields=tuple(fields),
                count=int(gd.get("count", 1)),
                size=tuple(int(x) for x in gd.get("size", (0, 0))),
                targetable=bool(gd.get("targetable", False)),
                doc=str(gd.get("doc", "")),
            )
        )
    ad = d.get("action", {})
    primary = tuple(ad.get("primary", ()))
    target_type = tuple(ad.get("target_type", ()))
    if not primary:
        errors.append("action.primary: the action space needs at least one primary action")
    if len(target_type) != len(primary):
        errors.append(
            f"action.target_type: needs one entry per primary action ({len(primary)}), got {len(target_type)}"
        )
    for t in target_type:
        if t not in TARGET_TYPES:
            errors.append(f"action.target_type: {t!r} is not one of {', '.join(TARGET_TYPES)}")
    frame = d.get("frame", "world")
    if frame not in ("world", "team"):
        errors.append(f"frame: must be one of world, team, got {frame!r}")
    if frame == "team":
        for g in groups:
            if g.kind == "grid" and g.size[0] != g.size[1]:
                errors.append(f"groups.{g.name}.size: the team frame reflects grids, so they must be square")
    if errors:
        from fivectl.errors import ConfigError

        raise ConfigError(errors, source)
    return ObsSchema(
        version=version,
        groups=tuple(groups),
        action=ActionSpec(
            primary=primary,
            target_type=target_type,
            delays=int(ad.get("delays", 4)),
            offset_grid=int(ad.get("offset_grid", 9)),
        ),
        description=str(d.get("description", "")),
        frame=frame,
    )


def schemas_dir() -> Path:
    """Where ``obs/vN.toml`` live: ``$FIVECTL_SCHEMAS`` if set, else the package's own ``fivectl/schemas/``
    (shipped with it; the repository's top-level ``schemas`` is a link to it)."""
    env = os.environ.get("FIVECTL_SCHEMAS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "schemas"


def available_versions() -> list[int]:
    out = []
    for p in (schemas_dir() / "obs").glob("v*.toml"):
        try:
            out.append(int(p.stem[1:]))
        except ValueError:
            continue
    return sorted(out)


def load_schema(version: int) -> ObsSchema:
    """Load ``schemas/obs/v{version}.toml``; an unknown version is a clear BadInput."""
    path = schemas_dir() / "obs" / f"v{version}.toml"
    if not path.exists():
        have = ", ".join(f"v{v}" for v in available_versions()) or "none"
        raise BadInput(f"observation schema v{version} does not exist (available: {have})")
    return schema_from_dict(tomllib.loads(path.read_text()), source=str(path))


__all__ = ["ActionSpec", "Field", "Group", "ObsSchema", "available_versions", "load_schema"]
