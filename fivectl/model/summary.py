"""Parameter counts by block (``fivectl model summary``), computed without allocating the weights."""

from __future__ import annotations

import torch
from torch import nn

from fivectl.config.model import ModelConfig
from fivectl.model.policy import PolicyNet
from fivectl.schema.spec import ObsSchema


def block_of(param_name: str) -> str:
    """``encoder.unitsets.heroes.0.weight`` -> ``encoder.unitsets.heroes``; ``heads.primary.bias`` ->
    ``heads.primary``; ``lstm.weight_hh_l0`` -> ``lstm``."""
    parts = param_name.split(".")
    if parts[0] == "encoder":
        return ".".join(parts[:3])
    if parts[0] in ("heads", "aux"):
        return ".".join(parts[:2])
    return parts[0]


def parameter_blocks(net: nn.Module) -> dict[str, int]:
    """Block name -> number of trainable parameters, in module order."""
    blocks: dict[str, int] = {}
    for name, p in net.named_parameters():
        key = block_of(name)
        blocks[key] = blocks.get(key, 0) + p.numel()
    return blocks


def build_meta(schema: ObsSchema, cfg: ModelConfig, team_size: int) -> PolicyNet:
    """The network on the meta device: shapes and names only, so a 159M-parameter model costs no memory."""
    with torch.device("meta"):
        return PolicyNet(schema, cfg, team_size)


def model_summary(schema: ObsSchema, cfg: ModelConfig, team_size: int) -> dict:
    """``{"parameters": total, "blocks": {name: count}}``."""
    blocks = parameter_blocks(build_meta(schema, cfg, team_size))
    return {"parameters": sum(blocks.values()), "blocks": blocks}
