"""The run's state and its checkpoints: what the learner saves every few versions and resume restores exactly.

A checkpoint holds the model with its normalizers (and the moving average of its weights, when the recipe keeps
one), the optimizer, the reward scalers, the counters, the opponent pool, the schedule positions (counters) and
the RNG states, so iterations after a resume continue with no gap and no duplicate. Corrupt newest checkpoints are skipped with a warning and the newest good one is loaded.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from fivectl import __version__
from fivectl.config import Recipe
from fivectl.config.loader import to_dict
from fivectl.errors import SchemaMismatch
from fivectl.model import PolicyNet
from fivectl.rl.aux import aux_losses
from fivectl.rl.averaging import WeightAverage
from fivectl.rl.data_parallel import DataParallel
from fivectl.rl.gae import gamma_from_horizon
from fivectl.rl.learner import PPOLearner
from fivectl.rl.normalize import RewardScaler
from fivectl.rl.schedules import step_seconds
from fivectl.schema import ObsSchema
from fivectl.selfplay import OpponentPool
from fivectl.store.checkpoint import Checkpoint, CheckpointFallbackWarning, CheckpointStore
from fivectl.store.retention import PoolSlimmer
from fivectl.store.rundir import RunDir
from fivectl.store.state_codec import (
    cuda_rng_states,
    flatten_state,
    set_cuda_rng_states,
    set_torch_rng_state,
    torch_rng_state,
    unflatten_state,
)


@dataclass
class Counters:
    """Everything that counts training progress; saved in every checkpoint."""

    version: int = 0
    iteration: int = 0
    gradient_steps: int = 0
    samples: int = 0  # agent-steps trained on (max_samples and schedules count these)
    samples_produced: int = 0  # agent-steps received from workers, dropped ones included
    samples_consumed: int = 0  # samples × passes over them (sample reuse = consumed / produced)
    fragments: int = 0
    fragments_dropped: int = 0
    games: int = 0
    wall_seconds: float = 0.0
    steps_since_publish: int = 0
    warmup_end_version: int = 0


@dataclass
class LearnerState:
    """What a checkpoint holds besides the RNG of torch: the learner's objects that change as it trains."""

    model: PolicyNet
    learner: PPOLearner
    generator: torch.Generator
    reward_scalers: list[RewardScaler]
    pool: OpponentPool
    counters: Counters
    average: WeightAverage | None = None  # the moving average of the weights (train.average_samples > 0)


def build_learner_state(
    recipe: Recipe,
    schema: ObsSchema,
    device: torch.device,
    reward_scalers: int,
    data_parallel: DataParallel | None = None,
) -> LearnerState:
    """A fresh learner state from the recipe's seed: every learner rank builds the same one."""
    train = recipe.train
    team_size = recipe.game.team_size
    torch.manual_seed(train.seed)
    model = PolicyNet(schema, recipe.model, team_size, obs_clip=train.obs_clip).to(device)
    generator = torch.Generator().manual_seed(train.seed)
    learner = PPOLearner(
        model,
        train,
        team_size=team_size,
        aux_loss_fn=aux_losses,
        objective_gamma=gamma_from_horizon(train.aux_objective_horizon_s, step_seconds(recipe)),
        generator=generator,
        data_parallel=data_parallel,
    )
    agents_per_worker = train.games_per_worker * 2 * team_size
    return LearnerState(
        model=model,
        learner=learner,
        generator=generator,
        reward_scalers=[RewardScaler(agents_per_worker) for _ in range(max(reward_scalers, 1))],
        pool=OpponentPool(recipe.selfplay),
        counters=Counters(),
        average=WeightAverage(model, train.average_samples) if train.average_samples > 0 else None,
    )


def apply_checkpoint(state: LearnerState, ckpt: Checkpoint) -> None:
    """Load a checkpoint into ``state``: model, optimizer, reward scalers, counters, pool and RNG states."""
    attrs = ckpt.attrs
    model = {k: torch.from_numpy(np.array(ckpt.arrays["model"][k])) for k in attrs["model_keys"]}
    state.model.load_state_dict(model)
    if state.average is not None:
        if "model_average" in ckpt.arrays:
            state.average.load_arrays(ckpt.arrays["model_average"])
        else:  # written before the recipe asked for an average: it starts here
            state.average.reset(state.model)
    # a section without arrays (the optimizer before its first step) is not stored
    state.learner.load_state_dict(unflatten_state(ckpt.arrays.get("optimizer", {}), attrs["optimizer_meta"]))
    RunCheckpoints.restore_reward_scalers(
        state.reward_scalers,
        unflatten_state(ckpt.arrays.get("reward_scaler", {}), attrs["reward_scaler_meta"]),
    )
    state.counters = Counters(**attrs["counters"])
    state.pool.load_state_dict(attrs["opponent_pool"])
    state.generator.set_state(torch.tensor(attrs["generator_state"], dtype=torch.uint8))
    set_torch_rng_state(ckpt.arrays["rng"]["torch"])
    if "cuda" in ckpt.arrays["rng"]:
        set_cuda_rng_states(np.array(ckpt.arrays["rng"]["cuda"]))


def rng_arrays() -> dict[str, np.ndarray]:
    """The torch RNG states a checkpoint keeps: the CPU generator, and each CUDA device's when CUDA exists."""
    arrays = {"torch": torch_rng_state()}
    cuda = cuda_rng_states()
    if cuda is not None:
        arrays["cuda"] = cuda
    return arrays


class RunCheckpoints:
    """Writes and restores a run's :class:`LearnerState` in its checkpoint store, with retention."""

    def __init__(self, run: RunDir, recipe: Recipe, schema: ObsSchema, note: Callable[[str], None]):
        self.run = run
        self.recipe = recipe
        self.schema = schema
        self.note = note
        self.train_cfg = recipe.train
        self.store = CheckpointStore(run.checkpoints_path)
        self.slimmer = (
            PoolSlimmer(self.store, self.train_cfg.keep_last, self.train_cfg.milestone_every)
            if self.train_cfg.slim_pool_checkpoints
            else None
        )
        self.last_version: int | None = None
        self.restored_attrs: dict[str, Any] = {}  # the attributes of the checkpoint restore() loaded

    def attrs(self, state: LearnerState) -> dict[str, Any]:
        return {
            "fivectl_version": __version__,
            "schema_version": self.schema.version,
            "schema": self.schema.to_json(),
            "model_config": to_dict(self.recipe.model),
            "game_config": to_dict(self.recipe.game),
            "team_size": self.recipe.game.team_size,
            "counters": asdict(state.counters),
            "generator_state": state.generator.get_state().tolist(),
            "opponent_pool": state.pool.state_dict(),
            "recipe_name": self.recipe.name,
        }

    def save(
        self, state: LearnerState, extra_attrs: dict[str, Any] | None = None, in_use: list[int] | None = None
    ) -> int:
        """Write ``state`` as its version; ``extra_attrs``: JSON state of the features the trainer runs (the
        anneal's ramp), restored from :attr:`restored_attrs`; ``in_use``: versions retention must keep (one an
        evaluation process is loading)."""
        version = state.counters.version
        model_state = state.model.state_dict()
        opt_arrays, opt_meta = flatten_state(state.learner.state_dict())
        scaler_arrays, scaler_meta = flatten_state([s.state_dict() for s in state.reward_scalers])
        attrs = self.attrs(state)
        attrs.update(extra_attrs or {})
        attrs["optimizer_meta"] = opt_meta
        attrs["reward_scaler_meta"] = scaler_meta
        attrs["model_keys"] = list(model_state)
        sections = {
            "model": {k: v.detach().cpu().numpy() for k, v in model_state.items()},
            "optimizer": opt_arrays,
            "reward_scaler": scaler_arrays,
            "rng": rng_arrays(),
        }
        if state.average is not None:
            sections["model_average"] = state.average.arrays()
        self.store.save(version, sections, attrs)
        # Past versions in the opponent pool stay: workers load them to play against.
        self.store.prune(
            self.train_cfg.keep_last, self.train_cfg.milestone_every, keep=[*state.pool.versions, *(in_use or [])]
        )
        if self.slimmer is not None:
            self.slimmer.kick()
        self.last_version = version
        self.run.update_meta(latest_version=version, samples=state.counters.samples)
        return version

    def restore(self, state: LearnerState) -> int:
        """Load the last good checkpoint into ``state`` (falling back past corrupt ones with a warning)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CheckpointFallbackWarning)
            ckpt = self.store.load()
        for w in caught:
            self.note(f"warning: {w.message}")
        self.check_compatible(ckpt.attrs, ckpt.version)
        apply_checkpoint(state, ckpt)
        self.restored_attrs = dict(ckpt.attrs)
        surgery = ckpt.attrs.get("surgery")
        if surgery is not None and surgery.get("version") == state.counters.version:
            # The first resume of a run made by `fivectl surgery`: its first train.warmup_versions versions are
            # trained at learning rate 0 while normalizers and Adam's moments settle (paper B, smooth restart).
            state.counters.warmup_end_version = state.counters.version + self.train_cfg.warmup_versions
        discarded = self.store.discard_after(ckpt.version)
        if discarded:
            self.note(f"discarded unreadable checkpoints after v{ckpt.version}: {discarded}")
        self.last_version = ckpt.version
        return ckpt.version

    @staticmethod
    def restore_reward_scalers(scalers: list[RewardScaler], saved: list[dict[str, Any]]) -> None:
        if len(saved) == len(scalers):
            for scaler, sd in zip(scalers, saved, strict=True):
                scaler.load_state_dict(sd)
            return
        # A different worker count: every scaler starts from the mean statistics.
        for scaler in scalers:
            returns = torch.zeros_like(scaler.state_dict()["returns"])
            scaler.load_state_dict({**saved[0], "returns": returns})

    def check_compatible(self, attrs: dict[str, Any], version: int) -> None:
        have = int(attrs.get("schema_version", -1))
        want = self.schema.version
        if have != want:
            raise SchemaMismatch(
                f"checkpoint v{version} was written with observation schema v{have}, the recipe asks for v{want}; "
                f"bridge them with `fivectl surgery add-obs RUN --schema {want} --out NEW_RUN`"
            )
        if attrs.get("model_config") != to_dict(self.recipe.model):
            diffs = [
                f"{k}: {attrs['model_config'].get(k)!r} -> {v!r}"
                for k, v in to_dict(self.recipe.model).items()
                if attrs.get("model_config", {}).get(k) != v
            ]
            raise SchemaMismatch(
                f"checkpoint v{version} was written with another model config ({'; '.join(diffs)}); "
                "change a trained model with `fivectl surgery`"
            )

    def close(self) -> None:
        if self.slimmer is not None:
            self.slimmer.close()
