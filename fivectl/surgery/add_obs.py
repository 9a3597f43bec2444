"""``surgery add-obs``: carry a model to a superset observation schema without changing what it computes.

Paper B, "Changing the observation space": the first layer that reads a group gets new input columns, and they
start at zero, W' = [W 0], so the output is the same for any value of the new inputs until training moves them.
Concretely, for every group of the new schema:

- old float and categorical columns move to their (possibly reordered) positions, found by field name;
- new float columns and the embeddings of new categorical fields enter the first layer through zero columns (the
  new embedding tables themselves keep their random initialization: nothing reads them yet);
- a new group gets fresh layers and zero columns in ``fc``;
- the normalizer's mean, variance and count follow their columns; new columns are calibrated from a few
  simulated games (``calibrate``) so a new input is not clipped at +-5 the moment it gets a weight.
"""

from __future__ import annotations

import torch

from fivectl.config.model import ModelConfig
from fivectl.model.encoder import group_input_width
from fivectl.model.layout import first_layer_param, group_fc_columns
from fivectl.schema.spec import Group, ObsSchema
from fivectl.surgery.plan import Plan, State
from fivectl.surgery.remap import TensorMap
from fivectl.surgery.schemas import added_fields, check_superset, schema_label


def float_positions(old: Group, new: Group) -> torch.Tensor:
    """For each ``g.float`` column of ``old``, its column in ``new`` (matched by field name)."""
    new_cols = new.float_columns()
    parts = [torch.arange(new_cols[f.name].start, new_cols[f.name].stop) for f in old.float_fields]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)


def input_positions(old: Group, new: Group, cfg: ModelConfig) -> torch.Tensor:
    """For each input column of ``old``'s first layer (floats, then E embedding columns per categorical element),
    its column in ``new``'s first layer."""
    e = cfg.cat_embed
    new_cat = new.cat_columns()
    cats = []
    for f in old.cat_fields:
        start = new.n_float + new_cat[f.name].start * e
        cats.append(torch.arange(start, start + f.width * e))
    return torch.cat([float_positions(old, new), *cats])


def complement(positions: torch.Tensor, size: int) -> torch.Tensor:
    keep = torch.ones(size, dtype=torch.bool)
    keep[positions] = False
    return keep.nonzero().flatten()


def fc_positions(old: ObsSchema, new: ObsSchema, cfg: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(the new ``fc`` input column of every old one, the new columns) — groups matched by name."""
    new_cols = group_fc_columns(new, cfg)
    pos = torch.cat([torch.arange(new_cols[g.name].index.start, new_cols[g.name].index.stop) for g in old.groups])
    width = sum(c.index.stop - c.index.start for c in new_cols.values())
    return pos, complement(pos, width)


def plan_add_obs(
    old: ObsSchema,
    new: ObsSchema,
    cfg: ModelConfig,
    team_size: int,
    *,
    new_label: str,
    calibration=None,
    obs_clip: float = 5.0,
    seed: int = 0,
) -> Plan:
    """The plan from ``old`` to the superset ``new``. ``calibration``: ``{group: (mean, var, count)}`` per column
    of ``new``'s ``g.float`` (``calibrate.calibrate_columns``), used for the new columns; None leaves them at
    mean 0, variance 1 and count 0 (the first training batch then sets them)."""
    check_superset(old, new, new_label)
    plan = Plan(
        operation="add-obs",
        args={"schema": new_label},
        schema_before=old,
        schema_after=new,
        model_before=cfg,
        model_after=cfg,
        team_size=team_size,
        obs_clip=obs_clip,
        seed=seed,
    )
    new_columns: dict[str, torch.Tensor] = {}
    for g in new.groups:
        first = first_layer_param(g)
        try:
            og = old.group(g.name)
        except KeyError:
            plan.notes[first] = "new group"
            new_columns[g.name] = torch.arange(g.n_float)
            continue
        in_pos = input_positions(og, g, cfg)
        fresh_in = complement(in_pos, group_input_width(g, cfg))
        if fresh_in.numel():
            plan.maps[first] = TensorMap(first, (slice(None), in_pos), zero=[(slice(None), fresh_in)])
            plan.notes[first] = f"{fresh_in.numel()} new input columns, zero"
        if og.n_float:
            fpos = float_positions(og, g)
            new_columns[g.name] = complement(fpos, g.n_float)
            for buffer in ("mean", "var", "mask", "count"):  # statistics and counts are per column
                key = f"encoder.norms.{g.name}.{buffer}"
                plan.maps[key] = TensorMap(key, (fpos,))
        elif g.n_float:
            new_columns[g.name] = torch.arange(g.n_float)
    fpos, fnew = fc_positions(old, new, cfg)
    if fnew.numel():
        plan.maps["fc.weight"] = TensorMap("fc.weight", (slice(None), fpos), zero=[(slice(None), fnew)])
        plan.notes["fc.weight"] = f"{fnew.numel()} new input columns (new groups), zero"
    plan.args["added"] = added_fields(old, new)
    plan.args["schema_after"] = schema_label(new)

    def adjust(parent: State, child: State) -> None:
        if calibration is None:
            return
        for group, columns in new_columns.items():
            if not columns.numel() or group not in calibration:
                continue
            mean, var, count = calibration[group]
            prefix = f"encoder.norms.{group}."
            child[prefix + "mean"][columns] = mean[columns].to(child[prefix + "mean"].dtype)
            child[prefix + "var"][columns] = var[columns].to(child[prefix + "var"].dtype)
            # its own count: a few thousand calibration rows that training data soon outweighs
            child[prefix + "count"][columns] = float(count)
            plan.notes[prefix + "mean"] = f"{columns.numel()} new columns calibrated on {count} rows"

    plan.adjust = adjust
    return plan
