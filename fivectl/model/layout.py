"""Where each schema field enters the network, by parameter name and column (for ``surgery add-obs``).

Surgery that adds or widens an observation field extends the first layer of the field's group with zero columns,
W_hat = [W 0] (paper B, "Changing the observation space"), so the network computes exactly the same function until
training moves the new weights. These helpers say which columns of which ``state_dict`` entry a field feeds,
derived from the schema and the model config alone (the same rules the encoder is built with).
"""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.model import ModelConfig
from fivectl.model.encoder import group_output_width
from fivectl.schema.spec import Group, ObsSchema


@dataclass(frozen=True)
class InputSlice:
    param: str  # state_dict key
    dim: int  # the input dimension of that tensor
    index: slice  # columns along ``dim``


FIRST_LAYER = {
    "vector": "encoder.vector.{g}.0.weight",
    "unitset": "encoder.unitsets.{g}.0.weight",
    "grid": "encoder.grids.{g}.0.weight",
}


def first_layer_param(group: Group) -> str:
    """The weight of a group's first layer; its input columns are ``g.float`` then the categorical embeddings."""
    return FIRST_LAYER[group.kind].format(g=group.name)


def field_input_slices(schema: ObsSchema, cfg: ModelConfig, group: str, field: str) -> list[InputSlice]:
    """The weight columns that ``group.field`` feeds (and, for float fields, its normalizer statistics).

    A float/bool field feeds the first-layer columns of its ``g.float`` columns and owns the same entries of the
    normalizer buffers; a categorical field feeds ``cat_embed`` columns per element after the float columns
    (its embedding table is :func:`embedding_param`).
    """
    g = schema.group(group)
    spec = next((f for f in g.fields if f.name == field), None)
    if spec is None:
        raise KeyError(f"schema v{schema.version}: group {group!r} has no field {field!r}")
    if spec.is_float:
        cols = g.float_columns()[field]
        stats = [InputSlice(f"encoder.norms.{g.name}.{b}", 0, cols) for b in ("mean", "var", "mask")]
        return [InputSlice(first_layer_param(g), 1, cols), *stats]
    cat = g.cat_columns()[field]
    e = cfg.cat_embed
    return [InputSlice(first_layer_param(g), 1, slice(g.n_float + cat.start * e, g.n_float + cat.stop * e))]


def embedding_param(group: str, field: str) -> str:
    return f"encoder.embeds.{group}.{field}.weight"


def group_fc_columns(schema: ObsSchema, cfg: ModelConfig) -> dict[str, InputSlice]:
    """Group name -> the columns of ``fc.weight`` that the group's pooled output feeds (for adding a group)."""
    out, start = {}, 0
    for g in schema.groups:
        width = group_output_width(g, cfg)
        out[g.name] = InputSlice("fc.weight", 1, slice(start, start + width))
        start += width
    return out
