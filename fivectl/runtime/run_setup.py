"""Setting a run up for ``fivectl train``: open or create its directory, check the recipe, pick the device."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fivectl.config import Recipe, load_recipe
from fivectl.errors import BadInput, ConfigError
from fivectl.runtime.distributed import LaunchEnv, check_learners
from fivectl.runtime.evaluation_hook import EvaluationHook
from fivectl.runtime.game_change_hook import GameChangeHook
from fivectl.runtime.init_from import INIT_FROM_KEY, InitialWeights, initial_weights_for
from fivectl.runtime.ray_backend import check_ray_backend
from fivectl.schema import load_schema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir


@dataclass
class TrainOptions:
    run_dir: Path
    recipe_path: Path | None = None
    resume: bool = False
    overrides: list[str] = field(default_factory=list)
    heartbeat_timeout_s: float = 120.0
    live: bool = True
    # Builds the periodic evaluation of new versions (run directory, recipe -> hook). The layer above runtime
    # supplies it (the CLI builds it from evaluate/), so the learner never imports a feature; None = no evaluation.
    evaluation: Callable[[Path, Recipe], EvaluationHook] | None = None
    # Builds the anneal of a change of the game (run directory, recipe -> hook), supplied the same way (the CLI
    # builds it from anneal/); None = the game as the recipe has it.
    game_change: Callable[[Path, Recipe], GameChangeHook] | None = None
    # RUN or RUN@VERSION whose network a new run starts from (``--init-from``); None = the recipe's initialization.
    init_from: str | None = None
    # Under torchrun: this process is rank 0 of the learners torchrun started (``train.learners`` is their count);
    # None = the trainer starts its other learners itself.
    launch: LaunchEnv | None = None


# What ``--device auto`` means when set: a test suite pins it to cpu so that a machine with a GPU runs the same
# tests as one without (a test that wants CUDA asks for it by name).
AUTO_DEVICE_ENV = "FIVECTL_AUTO_DEVICE"


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        name = os.environ.get(AUTO_DEVICE_ENV) or ("cuda" if torch.cuda.is_available() else "cpu")
        if name not in ("cpu", "cuda"):
            raise BadInput(f"{AUTO_DEVICE_ENV}={name!r}: must be cpu or cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise BadInput("--device cuda: no CUDA device on this machine (use auto or cpu)")
    return torch.device(name)


def open_or_create_run(opts: TrainOptions) -> tuple[RunDir, Recipe, InitialWeights | None]:
    """The run to train, its recipe, and for a new run ``--init-from``'s checked weights (read before the run
    directory is created, so a source that does not fit leaves nothing behind)."""
    if opts.resume and opts.init_from is not None:
        raise BadInput("--init-from starts a new run; --resume continues one (its weights are its own)")
    if opts.resume:
        run = RunDir.open(opts.run_dir)
        recipe = run.load_recipe(opts.overrides)
        if opts.recipe_path is not None:
            given = load_recipe(opts.recipe_path, opts.overrides)
            for section in ("game", "model"):
                if getattr(given, section) != getattr(recipe, section):
                    raise BadInput(
                        f"{opts.recipe_path}: its [{section}] differs from the run's ({run.recipe_path}); "
                        "a running experiment changes through `fivectl surgery` / `fivectl anneal`"
                    )
        check_ray_backend(recipe)
        # a run killed before its first checkpoint starts again from the weights it was created with
        source = run.meta.get(INIT_FROM_KEY)
        initial = None
        if source and CheckpointStore(run.checkpoints_path).latest() is None:
            initial = initial_weights_for(source, run.obs_schema(recipe.model.schema_version), recipe)
        return run, recipe, initial  # overrides (budgets, workers, ...) apply to this session only
    if opts.recipe_path is None:
        raise BadInput("give a RECIPE to start a run")
    recipe = load_recipe(opts.recipe_path, opts.overrides)
    check_recipe_for_training(recipe)
    check_learners(recipe.train.learners, resolve_device(recipe.train.device), opts.launch)
    schema = load_schema(recipe.model.schema_version)
    check_ray_backend(recipe)
    initial, extra = None, {}
    if opts.init_from is not None:
        initial = initial_weights_for(opts.init_from, schema, recipe)
        extra = {INIT_FROM_KEY: initial.pinned_spec}
    run = RunDir.create(opts.run_dir, recipe, recipe_source=str(opts.recipe_path), extra=extra)
    return run, recipe, initial


def check_recipe_for_training(recipe: Recipe) -> None:
    t = recipe.train
    errors = []
    if t.fragment_length % t.bptt != 0:
        errors.append(
            f"train.fragment_length: {t.fragment_length} must be a multiple of train.bptt ({t.bptt})"
        )
    if t.epochs > t.max_sample_reuse:
        errors.append(
            f"train.epochs: {t.epochs} passes exceed train.max_sample_reuse ({t.max_sample_reuse:g})"
        )
    if errors:
        raise ConfigError(errors, "recipe")
