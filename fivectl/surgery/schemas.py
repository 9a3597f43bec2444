"""Which schema a surgery goes to, and whether the run's schema can go there without changing the model's function.

``--schema 3`` is ``schemas/obs/v3.toml``; ``--schema PATH`` reads a schema file. ``add-obs`` needs a *superset*:
every group and field of the run's schema is still there with the same kind, shape, vocabulary and normalization
(order may change: weights are mapped by name), the action space and frame are the same, and a new group is not a
target set (new target slots would take probability from the old ones). ``retire`` derives its schema from the
run's by marking one field ``retired`` with a ``constant``.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import replace
from pathlib import Path

from fivectl.errors import BadInput
from fivectl.schema.spec import Field, Group, ObsSchema, load_schema, schema_from_dict


def resolve_schema(spec: str) -> ObsSchema:
    """``N`` or ``vN`` -> ``schemas/obs/vN.toml``; anything else is a path to a schema TOML (or JSON) file."""
    text = spec.strip()
    digits = text[1:] if text[:1] in ("v", "V") else text
    if digits.isdigit():
        return load_schema(int(digits))
    return load_schema_file(Path(text))


def load_schema_file(path: Path) -> ObsSchema:
    """A schema from any file, parsed and checked like ``schemas/obs/vN.toml``."""
    if not path.is_file():
        raise BadInput(f"--schema {path}: neither a schema version (e.g. 3) nor a schema file")
    try:
        text = path.read_text()
        if path.suffix == ".json":
            return ObsSchema.from_json(text)
        return schema_from_dict(tomllib.loads(text), source=str(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as e:
        raise BadInput(f"{path}: unreadable schema: {e}") from None


def did_you_mean(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def all_field_names(schema: ObsSchema) -> list[str]:
    return [f"{g.name}.{f.name}" for g in schema.groups for f in g.fields]


def find_field(schema: ObsSchema, qualified: str) -> tuple[Group, Field]:
    """``group.field`` -> (group, field); an unknown name is BadInput with the closest existing name."""
    group_name, _, field_name = qualified.partition(".")
    names = all_field_names(schema)
    if not field_name:
        raise BadInput(f"--field {qualified}: give GROUP.FIELD, e.g. self.buyback_cost{did_you_mean(qualified, names)}")
    group = next((g for g in schema.groups if g.name == group_name), None)
    field = next((f for f in group.fields if f.name == field_name), None) if group else None
    if field is None:
        raise BadInput(f"schema v{schema.version} has no field {qualified}{did_you_mean(qualified, names)}")
    return group, field


GROUP_KEYS = ("kind", "count", "size", "targetable")
FIELD_KEYS = ("kind", "shape", "vocab", "norm", "retired", "constant")


def superset_errors(old: ObsSchema, new: ObsSchema, ignore: tuple[str, ...] = ()) -> list[str]:
    """Why ``new`` cannot carry a model of ``old`` unchanged (empty when it can); field keys in ``ignore`` may
    differ (``("retired", "constant")``: observations of ``old`` can still be fed to ``new`` at its constants)."""
    errors = []
    if new.action != old.action:
        errors.append("the action space differs (add-obs keeps the actions; it changes observations only)")
    if new.frame != old.frame:
        errors.append(f"frame {old.frame!r} -> {new.frame!r} changes what every position means")
    new_groups = {g.name: g for g in new.groups}
    for g in old.groups:
        ng = new_groups.get(g.name)
        if ng is None:
            errors.append(f"group {g.name} is missing{did_you_mean(g.name, list(new_groups))}")
            continue
        for key in GROUP_KEYS:
            if getattr(g, key) != getattr(ng, key):
                errors.append(f"group {g.name}: {key} {getattr(g, key)!r} -> {getattr(ng, key)!r}")
        new_fields = {f.name: f for f in ng.fields}
        for f in g.fields:
            nf = new_fields.get(f.name)
            if nf is None:
                candidates = [f"{g.name}.{n}" for n in new_fields]
                errors.append(f"field {g.name}.{f.name} is missing{did_you_mean(f'{g.name}.{f.name}', candidates)}")
                continue
            for key in FIELD_KEYS:
                if key not in ignore and getattr(f, key) != getattr(nf, key):
                    errors.append(f"field {g.name}.{f.name}: {key} {getattr(f, key)!r} -> {getattr(nf, key)!r}")
    old_names = {g.name for g in old.groups}
    for g in new.groups:
        if g.name not in old_names and g.kind == "unitset" and g.targetable:
            errors.append(f"new group {g.name} is a target set: its slots would change the target distribution")
    return errors


def check_superset(old: ObsSchema, new: ObsSchema, new_label: str) -> None:
    errors = superset_errors(old, new)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise BadInput(f"{new_label} is not a superset of the run's schema v{old.version}: {errors[0]}{more}")
    if not added_fields(old, new):
        raise BadInput(f"{new_label} adds nothing to the run's schema v{old.version}")


def added_fields(old: ObsSchema, new: ObsSchema) -> list[str]:
    """``group.field`` names in ``new`` and not in ``old`` (new groups count all their fields)."""
    have = set(all_field_names(old))
    return [name for name in all_field_names(new) if name not in have]


def retired_schema(schema: ObsSchema, group: str, field: str, constant: float) -> ObsSchema:
    """``schema`` with ``group.field`` fed ``constant`` from now on."""
    groups = []
    for g in schema.groups:
        if g.name == group:
            fields = tuple(
                replace(f, retired=True, constant=float(constant)) if f.name == field else f for f in g.fields
            )
            g = replace(g, fields=fields)
        groups.append(g)
    return replace(schema, groups=tuple(groups))


def schema_label(schema: ObsSchema) -> dict:
    """How lineage names a schema: its version and the fields it retires."""
    retired = [f"{g.name}.{f.name}" for g in schema.groups for f in g.fields if f.retired]
    return {"version": schema.version, "retired": retired, "fields": len(all_field_names(schema))}
