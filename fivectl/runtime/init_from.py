"""``fivectl train RECIPE --init-from RUN@VERSION``: a new run whose network starts as another run's version.

A curriculum in the sense of the Honor of Kings papers: learn a smaller game first (the 1v1 quickstart), then
start the larger one (5v5, three lanes) from what was learned, with a fresh optimizer, reward scalers, opponent
pool and counters. The per-hero network has the same parameters in both games when the schema and ``[model]``
agree; only the auxiliary heads sized by the team (``aux.networth_rank``: one rank per teammate) differ, and
those keep the new run's initialization. Anything else that does not fit is bad input, checked before the run
directory is created. The source is read, never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fivectl.config import Recipe
from fivectl.config.loader import to_dict
from fivectl.errors import BadInput
from fivectl.model import PolicyNet
from fivectl.schema.spec import ObsSchema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.run_spec import resolve_version, split_run_spec
from fivectl.store.rundir import INIT_FROM, RunDir

# Parameters that may be sized by the game rather than by [model]: they start fresh when their shape differs.
GAME_SIZED_PREFIXES = ("aux.",)
EVENT = INIT_FROM_KEY = INIT_FROM  # the lineage event, and the run.json key of the pinned source


@dataclass
class InitialWeights:
    """The tensors a new run's network starts from, checked against the network the recipe builds."""

    spec: str
    pinned_spec: str  # the source's absolute path @ the version number: what a restart before v0 reads again
    run_name: str
    version: int
    tensors: dict[str, torch.Tensor]
    fresh: list[str]  # game-sized parameters that keep the new run's initialization
    model_config_changes: dict[str, Any]  # [model] keys whose values differ (same shapes): source values

    def apply(self, model: PolicyNet) -> None:
        missing, unexpected = model.load_state_dict(self.tensors, strict=False)
        assert sorted(missing) == sorted(self.fresh) and not unexpected, (missing, unexpected)

    def lineage_entry(self) -> dict[str, Any]:
        return {
            "event": EVENT,
            "source": self.spec,
            "source_name": self.run_name,
            "source_version": self.version,
            "fresh": self.fresh,
            "model_config_changes": self.model_config_changes,
        }


def read_initial_weights(spec: str, model: PolicyNet, model_config: dict[str, Any]) -> InitialWeights:
    """The weights of ``spec`` (``RUN`` or ``RUN@VERSION``) for ``model``: same schema, same parameter shapes
    except the game-sized heads; BadInput naming every mismatch otherwise."""
    path, version = split_run_spec(spec)
    store = CheckpointStore(RunDir.open(path).checkpoints_path)
    number = resolve_version(store, version, spec)
    ckpt = store.load(number, sections=("model",))
    attrs = ckpt.attrs
    schema = ObsSchema.from_json(attrs["schema"])
    if schema.to_json() != model.schema.to_json():
        raise BadInput(
            f"--init-from {spec}: its observation schema (v{schema.version}) is not the recipe's "
            f"(v{model.schema.version}); carry it over with `fivectl surgery add-obs` first"
        )
    source = {k: ckpt.arrays["model"][k] for k in attrs["model_keys"]}
    errors, fresh = network_mismatches({k: tuple(a.shape) for k, a in source.items()}, model)
    if errors:
        raise BadInput(f"--init-from {spec}: its network differs from the recipe's [model]: {shown_errors(errors)}")
    given = attrs.get("model_config", {})
    changes = {k: given.get(k) for k, v in model_config.items() if given.get(k) != v}
    tensors = {k: torch.from_numpy(np.array(a)) for k, a in source.items() if k not in fresh}
    pinned = f"{path.resolve()}@{number}"
    return InitialWeights(spec, pinned, path.name, number, tensors, sorted(fresh), changes)


def network_mismatches(
    source: dict[str, tuple[int, ...]], model: PolicyNet
) -> tuple[list[str], list[str]]:
    """What keeps parameters of these shapes from loading into ``model``: (errors, the game-sized parameters that
    start fresh)."""
    target = model.state_dict()
    errors, fresh = [], []
    for key, value in target.items():
        have = source.get(key)
        if have is not None and tuple(have) == tuple(value.shape):
            continue
        if key.startswith(GAME_SIZED_PREFIXES):
            fresh.append(key)
        elif have is None:
            errors.append(f"{key} is missing")
        else:
            errors.append(f"{key} is {list(have)}, the recipe's {list(value.shape)}")
    errors += [f"{key} is not in the recipe's network" for key in source.keys() - target.keys()]
    return errors, fresh


def shown_errors(errors: list[str]) -> str:
    return "; ".join(errors[:4]) + (f"; and {len(errors) - 4} more" if len(errors) > 4 else "")


def network_for(recipe: Recipe, schema: ObsSchema) -> PolicyNet:
    """A throwaway network of the recipe, for checking shapes."""
    return PolicyNet(schema, recipe.model, recipe.game.team_size, obs_clip=recipe.train.obs_clip)


def check_first_stage_fits(first: Recipe, first_schema: ObsSchema, recipe: Recipe, schema: ObsSchema) -> None:
    """BadInput unless a run of ``recipe`` can start from a run of ``first`` (``[curriculum] first``): checked
    before the first stage trains, not after it."""
    where = f"curriculum.first ({first.name})"
    if first_schema.to_json() != schema.to_json():
        raise BadInput(
            f"{where}: its observation schema (v{first_schema.version}) is not the recipe's (v{schema.version})"
        )
    source = {k: tuple(v.shape) for k, v in network_for(first, first_schema).state_dict().items()}
    errors, _ = network_mismatches(source, network_for(recipe, schema))
    if errors:
        raise BadInput(f"{where}: its network differs from the recipe's [model]: {shown_errors(errors)}")


def initial_weights_for(spec: str, schema: ObsSchema, recipe: Recipe) -> InitialWeights:
    """Checked weights for a run of ``recipe`` about to start: built on a throwaway network of the recipe."""
    return read_initial_weights(spec, network_for(recipe, schema), to_dict(recipe.model))
