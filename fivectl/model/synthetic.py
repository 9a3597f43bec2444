"""Random but valid encoded observations from a schema, for tests and benchmarks of the network.

Valid means what the encoder guarantees: categorical ids inside their vocab; unit masks with at least one
observed slot per set; ``noop`` always available; ``param_mask`` consistent with each action's target type; a
unit action's ``target_mask`` a subset of the observed slots of the targetable sets.
"""

from __future__ import annotations

import torch

from fivectl.model.encoder import Obs
from fivectl.schema.spec import ObsSchema

PARAM_USE = {
    "none": (False, False),
    "point": (False, True),
    "unit": (True, False),
    "unit_offset": (True, True),
}


def random_obs(schema: ObsSchema, lead: tuple[int, ...], generator: torch.Generator | None = None) -> Obs:
    """One observation per index of ``lead`` (e.g. ``(T, B)`` or ``(B,)``), every array of ``array_specs()``."""
    g = generator or torch.Generator().manual_seed(0)
    obs: Obs = {}
    for group in schema.groups:
        item = group.item_shape()
        obs[f"{group.name}.float"] = torch.randn(*lead, *item, group.n_float, generator=g)
        if group.n_cat:
            vocabs = torch.tensor([f.vocab for f in group.cat_fields for _ in range(f.width)])
            u = torch.rand(*lead, *item, group.n_cat, generator=g)
            obs[f"{group.name}.cat"] = (u * vocabs).long().clamp_(max=vocabs - 1).to(torch.int32)
        if group.kind == "unitset":
            mask = torch.rand(*lead, group.count, generator=g) < 0.6
            mask[..., 0] = True
            obs[f"{group.name}.mask"] = mask
    n_primary = schema.action.n_primary
    action_mask = torch.rand(*lead, n_primary, generator=g) < 0.7
    action_mask[..., 0] = True
    obs["action_mask"] = action_mask
    param_mask = torch.zeros(*lead, n_primary, 2, dtype=torch.bool)
    for i, kind in enumerate(schema.action.target_type):
        if kind in PARAM_USE:
            param_mask[..., i, 0], param_mask[..., i, 1] = PARAM_USE[kind]
        else:  # "dynamic": depends on the hero's ability in that slot
            param_mask[..., i, :] = torch.rand(*lead, 2, generator=g) < 0.5
    obs["param_mask"] = param_mask
    observed = [obs[f"{t.name}.mask"] for t in schema.target_groups]
    slots = torch.cat(observed, dim=-1) if observed else torch.zeros(*lead, 0, dtype=torch.bool)
    in_range = torch.rand(*lead, n_primary, slots.shape[-1], generator=g) < 0.5
    obs["target_mask"] = in_range & slots.unsqueeze(-2) & param_mask[..., :, :1]
    return obs
