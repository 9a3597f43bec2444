"""``surgery widen``: wider FC, LSTM and unit MLP layers that compute exactly what the narrower ones did.

Paper B, "Changing the architecture": a new unit gets random incoming weights and zero outgoing weights,
W1' = [W1; R], W2' = [W2 0], so it is computed but read by nothing until training moves its outgoing weights.

- ``--unit-hidden``: the unit-set MLP's hidden layer (``unitsets.G.0`` rows, ``unitsets.G.2`` zero columns).
- ``--fc``: the layer before the LSTM. Its first ``cross_hero_fraction`` of units is max-pooled across teammates
  (paper Figure 8, ``model.policy.cross_hero_pool``), so the old pooled units stay at the front and the new ones
  are split between the pooled slice and the rest: old unit i < P stays at i, old unit i >= P moves to
  i + (P' - P). The LSTM's input weights read the new units through zero columns.
- ``--lstm``: every gate block (i, f, g, o) keeps its old rows at the front; the recurrent weights of the old units
  read the new hidden units through zero columns, and so does everything else that reads h: the action and value
  heads, the target-attention query and the auxiliary heads. New units' cell and hidden states never reach an
  old unit, so the old units compute what they did, for any state of the new ones.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from fivectl.config.model import ModelConfig
from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema
from fivectl.surgery.plan import Plan
from fivectl.surgery.remap import TensorMap

LSTM_GATES = 4  # torch's row blocks of weight_ih/weight_hh/biases: input, forget, cell, output


def pool_width(fc_size: int, cfg: ModelConfig) -> int:
    return int(round(fc_size * cfg.cross_hero_fraction))


def fc_unit_positions(old: int, new: int, cfg: ModelConfig) -> torch.Tensor:
    """Where each old FC unit goes in the wider layer so that pooled units stay pooled and the rest do not."""
    p_old, p_new = pool_width(old, cfg), pool_width(new, cfg)
    if p_new < p_old or new - p_new < old - p_old:
        raise BadInput(
            f"--fc {new}: its cross-hero pooled slice ({p_new}) and the rest ({new - p_new}) must each hold at "
            f"least the old ones ({p_old} and {old - p_old})"
        )
    pos = torch.arange(old)
    pos[p_old:] += p_new - p_old
    return pos


def gate_rows(old: int, new: int) -> torch.Tensor:
    """Rows of the old units in every gate block of a widened LSTM."""
    return torch.cat([torch.arange(k * new, k * new + old) for k in range(LSTM_GATES)])


def new_positions(old_positions: torch.Tensor, size: int) -> torch.Tensor:
    keep = torch.ones(size, dtype=torch.bool)
    keep[old_positions] = False
    return keep.nonzero().flatten()


def h_readers(names) -> list[str]:
    """Every weight that reads the LSTM output h: the heads' (but the target keys', which read unit embeddings)
    and the first layer of each auxiliary head."""
    return [
        n
        for n in names
        if (n.startswith("heads.") and n.endswith(".weight") and not n.startswith("heads.target_key."))
        or (n.startswith("aux.") and n.endswith(".0.weight"))
    ]


def check_sizes(cfg: ModelConfig, fc: int | None, lstm: int | None, unit_hidden: int | None) -> ModelConfig:
    wanted = {"fc_size": fc, "lstm_size": lstm, "unit_hidden": unit_hidden}
    flags = {"fc_size": "--fc", "lstm_size": "--lstm", "unit_hidden": "--unit-hidden"}
    changes = {}
    for key, size in wanted.items():
        if size is None:
            continue
        have = getattr(cfg, key)
        if size < have:
            raise BadInput(f"{flags[key]} {size} is narrower than the model's {key} ({have}); widen only grows")
        if size > have:
            changes[key] = size
    if not changes:
        raise BadInput("nothing to widen: give --fc, --lstm or --unit-hidden larger than the model's sizes")
    return replace(cfg, **changes)


def plan_widen(
    schema: ObsSchema,
    cfg: ModelConfig,
    team_size: int,
    *,
    fc: int | None = None,
    lstm: int | None = None,
    unit_hidden: int | None = None,
    obs_clip: float = 5.0,
    seed: int = 0,
) -> Plan:
    wide = check_sizes(cfg, fc, lstm, unit_hidden)
    args = {k: v for k, v in (("fc", fc), ("lstm", lstm), ("unit_hidden", unit_hidden)) if v is not None}
    plan = Plan("widen", args, schema, schema, cfg, wide, team_size, obs_clip=obs_clip, seed=seed)
    maps = plan.maps

    if wide.unit_hidden != cfg.unit_hidden:
        u, u2 = cfg.unit_hidden, wide.unit_hidden
        for g in schema.groups:
            if g.kind != "unitset":
                continue
            prefix = f"encoder.unitsets.{g.name}"
            maps[f"{prefix}.0.weight"] = TensorMap(f"{prefix}.0.weight", (slice(0, u),))
            maps[f"{prefix}.0.bias"] = TensorMap(f"{prefix}.0.bias", (slice(0, u),))
            maps[f"{prefix}.2.weight"] = TensorMap(
                f"{prefix}.2.weight", (slice(None), slice(0, u)), zero=[(slice(None), slice(u, u2))]
            )
            plan.notes[f"{prefix}.0.weight"] = f"{u2 - u} new units, random in"
            plan.notes[f"{prefix}.2.weight"] = f"{u2 - u} new units, zero out"

    f, f2, h, h2 = cfg.fc_size, wide.fc_size, cfg.lstm_size, wide.lstm_size
    fc_pos = fc_unit_positions(f, f2, cfg) if f2 != f else torch.arange(f)
    if f2 != f:
        maps["fc.weight"] = TensorMap("fc.weight", (fc_pos,))
        maps["fc.bias"] = TensorMap("fc.bias", (fc_pos,))
        plan.notes["fc.weight"] = f"{f2 - f} new units, random in"
    rows = gate_rows(h, h2) if h2 != h else slice(None)
    ih_dest: tuple = (rows, fc_pos) if f2 != f else (rows,)
    ih_zero = [(slice(None), new_positions(fc_pos, f2))] if f2 != f else []
    if f2 != f or h2 != h:
        maps["lstm.weight_ih_l0"] = TensorMap("lstm.weight_ih_l0", ih_dest, zero=ih_zero)
        plan.notes["lstm.weight_ih_l0"] = "zero columns for new FC units" if f2 != f else "new units, random in"
    if h2 != h:
        maps["lstm.weight_hh_l0"] = TensorMap(
            "lstm.weight_hh_l0", (rows, slice(0, h)), zero=[(rows, slice(h, h2))]
        )
        plan.notes["lstm.weight_hh_l0"] = "old units read new units through zero columns"
        for bias in ("lstm.bias_ih_l0", "lstm.bias_hh_l0"):
            maps[bias] = TensorMap(bias, (rows,))
        for name in h_readers(plan.child_parameters()):
            maps[name] = TensorMap(name, (slice(None), slice(0, h)), zero=[(slice(None), slice(h, h2))])
            plan.notes[name] = "reads new LSTM units through zero columns"
    return plan
