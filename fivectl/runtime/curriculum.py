"""``[curriculum]``: train a first stage (the 1v1 quickstart, say) in ``RUN/first_stage``, then the run itself from
the stage's latest version, under one ``fivectl train`` and one time budget.

The run directory is created first, so that ``--resume`` finds it while its first stage trains; the stage is an
ordinary run inside it. Once the stage has trained its samples, the run's ``init_from`` (run.json) names the
stage's latest version, and from then on the run is what ``--init-from`` makes: killed before its version 0, it
starts again from the same weights (``open_or_create_run``). Each step writes atomically, so a kill at any moment
resumes with ``fivectl train --run RUN --resume``.

A first stage may have a first stage of its own (1v1 -> 3v3 -> 5v5): the stage is trained by this same function, so
it lives in ``RUN/first_stage/first_stage``, and the whole chain is checked before anything is written.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fivectl.config import Recipe, load_recipe
from fivectl.config.recipes import resolve_recipe
from fivectl.errors import BadInput
from fivectl.runtime.init_from import INIT_FROM_KEY, check_first_stage_fits
from fivectl.runtime.run_setup import TrainOptions, open_or_create_run
from fivectl.schema import load_schema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir

# --set keys that apply to the first stage too: where and how it trains, not what it learns (its recipe says that).
SHARED_KEYS = ("train.seed", "train.workers", "train.device", "train.learners", "train.backend", "train.ray_address")

MAX_STAGES = 8  # first stages in one chain

Train = Callable[[TrainOptions], dict[str, Any]]


def train_in_stages(opts: TrainOptions, train: Train) -> dict[str, Any]:
    """``train(opts)``, with the recipe's first stage trained before when it has one (``train``: the trainer,
    ``runtime.learner_loop.train_run``). Returns the run's summary, with ``first_stage`` (the stage's summary, or
    None when it had already finished); when the budget or a signal stops the stage, the stage's summary with
    ``stage = "first"``."""
    started = time.monotonic()
    recipe = run_recipe(opts)
    if not recipe.curriculum.first:
        return train(opts)
    if opts.init_from is not None:
        raise BadInput(
            f"--init-from: the recipe starts its run from its first stage (curriculum.first = "
            f"{recipe.curriculum.first!r}); leave --init-from out"
        )
    if opts.launch is not None:
        raise BadInput(
            "curriculum.first: under torchrun, train the first stage as its own run and start this one with "
            '--init-from (set curriculum.first = "")'
        )
    if opts.resume and past_first_stage(RunDir.open(opts.run_dir)):
        return {**train(opts), "first_stage": None}
    first_path = resolve_recipe(recipe.curriculum.first)
    check_stage_chain(recipe, run_schema(opts, recipe), opts.overrides)
    if opts.resume:
        run = RunDir.open(opts.run_dir)
    else:
        run, _, _ = open_or_create_run(opts)  # the run first: --resume finds it while the stage trains
    resumed = dataclasses.replace(opts, resume=True, recipe_path=None)

    stage = run.first_stage_path
    stage_summary = train_first_stage(opts, recipe, first_path, stage, train)
    if stage_summary["stop_reason"] == "interrupted" or trained_samples(stage) < recipe.curriculum.first_samples:
        return {**stage_summary, "stage": "first"}
    latest, _ = latest_checkpoint(stage)
    run.update_meta(**{INIT_FROM_KEY: f"{stage.resolve()}@{latest}"})

    budget = recipe.train.max_minutes
    if budget:
        left = budget - (time.monotonic() - started) / 60.0
        if left <= 0:
            return {**stage_summary, "stage": "first"}
        resumed = dataclasses.replace(resumed, overrides=[*opts.overrides, f"train.max_minutes={left}"])
    return {**train(resumed), "first_stage": stage_summary}


def past_first_stage(run: RunDir) -> bool:
    """The run's network no longer comes from its first stage: the stage finished in an earlier session (the run
    names its start), or the run already has versions (those of a surgery or an anneal)."""
    return bool(run.meta.get(INIT_FROM_KEY)) or CheckpointStore(run.checkpoints_path).latest() is not None


def train_first_stage(opts: TrainOptions, recipe: Recipe, first_path: Path, stage: Path, train: Train) -> dict:
    """Start or resume the first stage in ``stage`` until its samples (or the session's budget) are trained."""
    overrides = [
        *first_stage_overrides(opts.overrides, recipe),
        f"train.max_samples={recipe.curriculum.first_samples}",
        # the run's budget for this session (0: none), not one the stage saved in an earlier session
        f"train.max_minutes={recipe.train.max_minutes}",
    ]
    stage_opts = dataclasses.replace(opts, run_dir=stage, overrides=overrides, init_from=None)
    if RunDir.is_run(stage):
        if trained_samples(stage) >= recipe.curriculum.first_samples:
            return stage_summary_of(stage)
        stage_opts = dataclasses.replace(stage_opts, resume=True, recipe_path=None)
    else:
        stage_opts = dataclasses.replace(stage_opts, resume=False, recipe_path=first_path)
    return train_in_stages(stage_opts, train)  # the stage's own first stage, if it has one


def check_stage_chain(recipe: Recipe, schema, overrides: list[str]) -> None:
    """BadInput unless each stage of the chain (the recipe's first stage, that stage's first stage, ...) can start
    the next one, and no recipe comes back in it (a loop would never start the run)."""
    later, later_schema, seen = recipe, schema, set()
    while later.curriculum.first:
        path = resolve_recipe(later.curriculum.first)
        if path.resolve() in seen:
            raise BadInput(
                f"curriculum.first: {later.curriculum.first} comes back in the chain of first stages (a loop)"
            )
        if len(seen) >= MAX_STAGES:
            raise BadInput(f"curriculum.first: a chain of more than {MAX_STAGES} first stages")
        seen.add(path.resolve())
        stage = load_recipe(path, first_stage_overrides(overrides, later))
        stage_schema = load_schema(stage.model.schema_version)
        check_first_stage_fits(stage, stage_schema, later, later_schema)
        later, later_schema = stage, stage_schema


def first_stage_overrides(overrides: list[str], recipe: Recipe) -> list[str]:
    """The run's seed, and the run's ``--set`` of the keys in SHARED_KEYS."""
    shared = [o for o in overrides if o.split("=", 1)[0].strip() in SHARED_KEYS]
    return [f"train.seed={recipe.train.seed}", *shared]


def run_recipe(opts: TrainOptions) -> Recipe:
    if opts.resume:
        return RunDir.open(opts.run_dir).load_recipe(opts.overrides)
    if opts.recipe_path is None:
        raise BadInput("give a RECIPE to start a run")
    return load_recipe(opts.recipe_path, opts.overrides)


def run_schema(opts: TrainOptions, recipe: Recipe):
    version = recipe.model.schema_version
    return RunDir.open(opts.run_dir).obs_schema(version) if opts.resume else load_schema(version)


def latest_checkpoint(stage: Path) -> tuple[int, dict[str, Any]] | None:
    """The stage's latest checkpoint and its counters (None before its first)."""
    if not RunDir.is_run(stage):
        return None
    store = CheckpointStore(RunDir.open(stage).checkpoints_path)
    latest = store.latest()
    return None if latest is None else (latest, store.load_attrs(latest)["counters"])


def trained_samples(stage: Path) -> int:
    """Samples in the stage's latest checkpoint (0 before its first)."""
    found = latest_checkpoint(stage)
    return 0 if found is None else int(found[1]["samples"])


def stage_summary_of(stage: Path) -> dict[str, Any]:
    """What a finished stage's summary says, read back from its latest checkpoint."""
    latest, counters = latest_checkpoint(stage)
    return {
        "run": str(stage),
        "stop_reason": "max_samples",
        "version": counters.get("version", latest),
        "checkpoint": latest,
        "iterations": counters.get("iteration", 0),
        "samples": counters["samples"],
        "games": counters.get("games", 0),
        "wall_seconds": round(counters.get("wall_seconds", 0.0), 2),
    }
