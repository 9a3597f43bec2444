"""``surgery retire``: stop reading a field; feed it a constant and fold what that constant contributed into
the bias (paper B, "Removing model parts": retired fields are fed as constants).

The schema marks ``group.field`` ``retired`` with a ``constant``, so the game feeds that value from now on. The
first layer of the group computed W x + b; with the field's columns at the constant c (normalized as the parent
normalized it, or embedded for a categorical field) that is W_rest x_rest + (W_c c_norm + b). The child gets
b' = b + W_c c_norm and W_c' = 0, so any input with the field at c gives exactly the parent's output, and the
field's value no longer matters at all. On real data the field was not constant, so the function moves: ``verify``
measures how much. (A grid channel is exact away from the border only, where zero padding cuts the kernel.)
"""

from __future__ import annotations

import torch

from fivectl.config.model import ModelConfig
from fivectl.errors import BadInput
from fivectl.model.layout import embedding_param, field_input_slices, first_layer_param
from fivectl.schema.spec import ObsSchema
from fivectl.surgery.plan import Plan, State
from fivectl.surgery.schemas import find_field, retired_schema, schema_label

EPS = 1e-8  # RunningMeanStd's default, the one the encoder's normalizers use


def default_constant(schema: ObsSchema, qualified: str, parent: State) -> float:
    """The field's running mean (over its columns) for a float field, 0 for a categorical one."""
    group, field = find_field(schema, qualified)
    if not field.is_float:
        return 0.0
    cols = group.float_columns()[field.name]
    return float(parent[f"encoder.norms.{group.name}.mean"][cols].mean())


def normalized_constant(parent: State, group: str, cols: slice, constant: float, clip: float) -> torch.Tensor:
    """What the parent's first layer saw for float columns at ``constant``: float32, as ``RunningMeanStd`` does."""
    prefix = f"encoder.norms.{group}."
    mean = parent[prefix + "mean"][cols].to(torch.float32)
    inv_std = torch.rsqrt(parent[prefix + "var"][cols] + EPS).to(torch.float32)
    x = torch.full_like(mean, constant)
    normalized = ((x - mean) * inv_std).clamp(-clip, clip)
    return torch.where(parent[prefix + "mask"][cols], normalized, x)


def plan_retire(
    schema: ObsSchema,
    cfg: ModelConfig,
    team_size: int,
    qualified: str,
    constant: float,
    *,
    obs_clip: float = 5.0,
    seed: int = 0,
) -> Plan:
    group, field = find_field(schema, qualified)
    if field.retired:
        raise BadInput(f"{qualified} is already retired (fed {field.constant:g})")
    if field.kind == "categorical" and not (0 <= constant < field.vocab and float(constant).is_integer()):
        raise BadInput(f"--constant {constant:g}: {qualified} is categorical, give an id in 0..{field.vocab - 1}")
    new = retired_schema(schema, group.name, field.name, constant)
    plan = Plan(
        "retire",
        {"field": qualified, "constant": constant, "schema_after": schema_label(new)},
        schema,
        new,
        cfg,
        cfg,
        team_size,
        obs_clip=obs_clip,
        seed=seed,
        exact=False,
    )
    weight = first_layer_param(group)
    bias = weight.removesuffix("weight") + "bias"
    columns = field_input_slices(schema, cfg, group.name, field.name)[0].index

    def adjust(parent: State, child: State) -> None:
        if field.is_float:
            value = normalized_constant(parent, group.name, columns, constant, obs_clip)
        else:
            table = parent[embedding_param(group.name, field.name)]
            value = table[int(constant)].repeat(field.width)  # every element of the field embeds the same id
        w = child[weight]
        part = w[:, columns]
        # A conv reads the constant channel through every kernel tap: its contribution is the taps' sum.
        contribution = (part.flatten(2).sum(-1) if part.dim() > 2 else part) @ value.to(w.dtype)
        child[bias] += contribution
        w[:, columns] = 0
        if field.is_float:
            # the column now normalizes to 0: the zero weights get no gradient from a constant input
            mean = child[f"encoder.norms.{group.name}.mean"]
            mask = child[f"encoder.norms.{group.name}.mask"][columns]
            mean[columns] = torch.where(mask, torch.full_like(mean[columns], constant), mean[columns])

    plan.adjust = adjust
    plan.notes[weight] = f"{qualified} columns zero"
    plan.notes[bias] = f"{qualified} at {constant:g} folded in"
    return plan
