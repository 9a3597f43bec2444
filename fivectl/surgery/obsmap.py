"""Observations of one schema rewritten for another (for ``surgery verify`` and the exactness tests).

Old fields keep their values at their new columns (matched by name); fields the old schema lacks get random
values (the claim of ``add-obs`` is that the output does not depend on them); a field the new schema retires is
fed its constant, as the game will feed it.
"""

from __future__ import annotations

import torch

from fivectl.model.encoder import Obs
from fivectl.model.synthetic import random_obs
from fivectl.schema.spec import Group, ObsSchema

RANDOM_SCALE = 10.0  # new float inputs: wide enough to reach the normalizer's clip


def _columns(g: Group, float_part: bool) -> dict[str, slice]:
    return g.float_columns() if float_part else g.cat_columns()


def _carry(old: Group, new: Group, old_x: torch.Tensor, fresh: torch.Tensor, float_part: bool) -> torch.Tensor:
    """``fresh`` (new layout, random) with the columns of ``old``'s fields overwritten by their old values and the
    new schema's retired fields set to their constants."""
    out = fresh.clone()
    old_cols, new_cols = _columns(old, float_part), _columns(new, float_part)
    for name, cols in old_cols.items():
        out[..., new_cols[name]] = old_x[..., cols].to(out.dtype)
    fields = new.float_fields if float_part else new.cat_fields
    for f in fields:
        if f.retired:
            out[..., new_cols[f.name]] = torch.as_tensor(f.constant).to(out.dtype)
    return out


def action_masks(obs: Obs, old: ObsSchema, new: ObsSchema) -> Obs:
    """The action masks for ``new``'s primary actions: an action ``old`` lacked (``surgery add-action``) was
    unavailable in the old game (masked, no target, no parameters); the others keep their masks."""
    masks = {k: obs[k] for k in ("action_mask", "target_mask", "param_mask")}
    if new.action.primary == old.action.primary:
        return masks
    column = {name: i for i, name in enumerate(old.action.primary)}
    out = {}
    for key, value in masks.items():
        lead = value.shape[: obs["action_mask"].dim() - 1]
        grown = torch.zeros((*lead, new.action.n_primary, *value.shape[len(lead) + 1 :]), dtype=value.dtype)
        for i, name in enumerate(new.action.primary):
            if name in column:
                grown.select(len(lead), i).copy_(value.select(len(lead), column[name]))
        out[key] = grown
    return out


def obs_for_schema(obs: Obs, old: ObsSchema, new: ObsSchema, generator: torch.Generator) -> Obs:
    """``obs`` (any leading dims, encoded for ``old``) as ``new`` would encode it, new inputs random."""
    lead = tuple(obs["action_mask"].shape[:-1])
    fresh = random_obs(new, lead, generator)
    out = action_masks(obs, old, new)
    old_groups = {g.name: g for g in old.groups}
    for g in new.groups:
        og = old_groups.get(g.name)
        if og is None:  # a new group: all of it random
            out.update({k: v for k, v in fresh.items() if k.startswith(f"{g.name}.")})
            continue
        if g.n_float:
            random_floats = fresh[f"{g.name}.float"] * RANDOM_SCALE
            out[f"{g.name}.float"] = _carry(og, g, obs[f"{g.name}.float"], random_floats, True)
        if g.n_cat:
            old_cat = obs.get(f"{g.name}.cat", fresh[f"{g.name}.cat"])
            out[f"{g.name}.cat"] = _carry(og, g, old_cat, fresh[f"{g.name}.cat"], False)
        if g.kind == "unitset":
            out[f"{g.name}.mask"] = obs[f"{g.name}.mask"]
    return out


def obs_at_constants(obs: Obs, schema: ObsSchema) -> Obs:
    """``obs`` with every retired field of ``schema`` at its constant (what the game feeds)."""
    out = dict(obs)
    for g in schema.groups:
        for f in g.fields:
            if not f.retired:
                continue
            key = f"{g.name}.float" if f.is_float else f"{g.name}.cat"
            cols = (g.float_columns() if f.is_float else g.cat_columns())[f.name]
            x = out[key].clone()
            x[..., cols] = torch.as_tensor(f.constant).to(x.dtype)
            out[key] = x
    return out
