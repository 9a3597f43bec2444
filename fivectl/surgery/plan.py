"""What a surgery does to one checkpoint, independent of where checkpoints live: a :class:`Plan`.

An operation (``add_obs``, ``widen``, ``retire``) looks at the parent's schema and model config and returns a plan:
the child's schema and config, the :class:`~fivectl.surgery.remap.TensorMap` of every tensor that moves, and an
optional ``adjust`` step that edits values after the move (folding a retired input into a bias, calibrating new
normalizer columns). ``apply_model`` / ``apply_optimizer`` run a plan on one checkpoint's state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from fivectl.config.model import ModelConfig
from fivectl.model import PolicyNet
from fivectl.schema.spec import ObsSchema
from fivectl.surgery.remap import TensorMap, map_optimizer, map_state

State = dict[str, torch.Tensor]


@dataclass
class Plan:
    operation: str
    args: dict[str, Any]
    schema_before: ObsSchema
    schema_after: ObsSchema
    model_before: ModelConfig
    model_after: ModelConfig
    team_size: int
    obs_clip: float = 5.0
    maps: dict[str, TensorMap] = field(default_factory=dict)
    # value edits after the move: adjust(parent_state, child_state) changes child_state in place
    adjust: Callable[[State, State], None] | None = None
    notes: dict[str, str] = field(default_factory=dict)  # tensor name -> what happened to it (for the report)
    exact: bool = True  # the child computes exactly the parent's function (verify holds it to 1e-5)
    seed: int = 0
    _fresh: State | None = field(default=None, repr=False)
    _parameters: dict[str, torch.Size] = field(default_factory=dict, repr=False)

    def fresh_state(self) -> State:
        """The child network's own initialization (the random part of new units), the same for every version
        of the pool: built once, seeded."""
        if self._fresh is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                net = PolicyNet(self.schema_after, self.model_after, self.team_size, obs_clip=self.obs_clip)
            self._fresh = {k: v.detach() for k, v in net.state_dict().items()}
            self._parameters = {name: p.shape for name, p in net.named_parameters()}
        return self._fresh

    def child_parameters(self) -> dict[str, torch.Size]:
        """The child's parameter name -> shape, in the order a learner hands them to its optimizer."""
        self.fresh_state()
        return self._parameters

    def parent_parameter_names(self, parent_keys: list[str]) -> list[str]:
        """The parent's parameters in optimizer order: its ``state_dict`` keys (module order) that are parameters.
        Every parent tensor lives on in the child under its name, so the child says which are parameters."""
        child = self.child_parameters()
        sources = {m.source: name for name, m in self.maps.items() if m.source is not None}
        return [k for k in parent_keys if sources.get(k, k) in child]


def apply_model(plan: Plan, parent: State) -> State:
    child = map_state(parent, plan.fresh_state(), plan.maps)
    if plan.adjust is not None:
        plan.adjust(parent, child)
    return child


def apply_optimizer(plan: Plan, learner_state: dict, parent_keys: list[str]) -> dict:
    """The learner's ``state_dict`` (``{"optimizer": ..., "gradient_steps": n}``) for the child network;
    ``parent_keys``: the parent's ``state_dict`` keys in order (a checkpoint's ``model_keys``)."""
    optimizer = map_optimizer(
        learner_state["optimizer"], plan.parent_parameter_names(parent_keys), plan.child_parameters(), plan.maps
    )
    return {**learner_state, "optimizer": optimizer}


def changed_tensors(plan: Plan, parent: State, child: State) -> list[dict[str, Any]]:
    """Rows ``{name, before, after, note}`` for every tensor whose shape or values the surgery changed."""
    rows = []
    for name, value in child.items():
        before = parent.get(plan.maps[name].source if name in plan.maps else name)
        if before is None:
            rows.append({"name": name, "before": None, "after": list(value.shape), "note": "new"})
            continue
        if before.shape != value.shape or (name in plan.notes and not torch.equal(before, value)):
            note = plan.notes.get(name, "")
            if not note and before.dim() == 0 and value.dim() == 1:
                note = "one value per column (older checkpoints kept one)"
            rows.append({"name": name, "before": list(before.shape), "after": list(value.shape), "note": note})
    return rows


def parameter_counts(plan: Plan, parent: State) -> tuple[int, int]:
    """Trainable parameters before and after."""
    before = sum(parent[k].numel() for k in plan.parent_parameter_names(list(parent)))
    return before, sum(shape.numel() for shape in plan.child_parameters().values())
