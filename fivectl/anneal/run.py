"""``fivectl anneal start|stop|status`` on a run directory.

An anneal under way is the run recipe's ``[anneal] change`` (which the trainer and its workers read) plus an
entry ``anneal`` in ``run.json``: when it started and the TrueSkill baseline the guard compares against (the start
version rated under the change, ``guard.rate_start_version``). The
ramp itself (fraction, speed, guard history) lives in each checkpoint. ``stop --keep`` makes the change part of
the run's game (``anneal.kept``: every game runs it, in training and evaluation); ``stop --drop`` takes it out.
Each command checks everything before it writes, and every write is atomic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fivectl.anneal.controller import ANNEAL_META
from fivectl.anneal.guard import guard_cadence, rate_start_version
from fivectl.anneal.ramp import RampState
from fivectl.config import Recipe, recipe_from_dict
from fivectl.errors import BadInput
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rundir import RunDir, now_iso

HISTORY_META = "anneal_history"
"""run.json key: the anneals that ended, each with its last state and how it ended (keep or drop)."""
FROZEN_SECTIONS = ("game", "model")


def registry() -> list[dict[str, Any]]:
    """The registered changes of the game, as plain data (``fivectl anneal list``)."""
    from fivectl.sim import CHANGES

    return [
        {
            "name": c.name,
            "kind": c.kind,
            "summary": c.summary,
            "doc": c.doc,
            "needs_action": c.needs_action,
            "needs_hero_vocab": c.needs_hero_vocab,
        }
        for c in CHANGES.values()
    ]


@dataclass
class Started:
    run: Path
    change: str
    over: float
    guard: float
    baseline: dict[str, float]
    every_versions: int
    every_versions_from: str
    """The recipe setting the guard's cadence comes from (``guard.guard_cadence``)."""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__, run=str(self.run))


def start(
    run_arg: str, change_name: str, over: float | None, guard: float | None, overrides: list[str]
) -> Started:
    """Check everything, then record the anneal in the run's recipe and run.json (the trainer picks it up on
    its next ``--resume``)."""
    from fivectl.sim import get_change, missing_surgery

    run = RunDir.open(run_arg)
    recipe = run.load_recipe()
    change = get_change(change_name)
    if recipe.anneal.change:
        raise BadInput(
            f"{run_arg}: an anneal of {recipe.anneal.change} is under way; end it first with "
            f"`fivectl anneal stop {run_arg} --keep` (or --drop)"
        )
    if change.name in recipe.anneal.kept:
        raise BadInput(f"{run_arg}: {change.name} is already part of the run's game")
    if recipe.anneal.kept:
        raise BadInput(
            f"{run_arg}: the game runs one change at a time and this run keeps {recipe.anneal.kept[-1]}"
        )
    schema = run.obs_schema(recipe.model.schema_version)
    needed = missing_surgery(change, schema, run=run_arg)
    if needed is not None:
        raise BadInput(f"change {change.name} needs a surgery of the run first: {needed}")
    for o in overrides:
        if o.split("=", 1)[0].strip().split(".")[0] in FROZEN_SECTIONS:
            raise BadInput(
                f"--set {o}: the run's [game] and [model] change through surgery and anneal, not --set"
            )
    settings = [f'anneal.change="{change.name}"']
    if over is not None:
        settings.append(f"anneal.over_samples={float(over)}")
    if guard is not None:
        settings.append(f"anneal.guard={float(guard)}")
    new = recipe_from_dict(recipe.to_dict(), source=f"{run.recipe_path}", overrides=[*overrides, *settings])
    check_guard_setup(run, new)
    start_version = CheckpointStore(run.checkpoints_path).latest()
    if start_version is None:
        raise BadInput(f"{run_arg}: no checkpoint yet; train the run before annealing a change into it")
    # The guard's league is the first thing written: it lives apart from the run's, and until the recipe names
    # the change nothing reads it (a crash here leaves the run as it was; starting again moves it aside).
    baseline = rate_start_version(run.path, new, start_version)
    # run.json next: until the recipe names the change, nothing reads this entry either.
    run.update_meta(**{ANNEAL_META: {"change": change.name, "started": now_iso(), "baseline": baseline}})
    run.save_recipe(new)
    every, source = guard_cadence(new)
    return Started(
        run=run.path,
        change=change.name,
        over=new.anneal.over_samples,
        guard=new.anneal.guard,
        baseline=baseline,
        every_versions=every,
        every_versions_from=source,
    )


def check_guard_setup(run: RunDir, recipe: Recipe) -> None:
    """The guard plays ``eval.references``: there must be some."""
    if not recipe.eval.references:
        raise BadInput(f"{run.path}: eval.references is empty: the guard has no reference agents to play")


def checkpoint_ramp(run: RunDir, started: str | None) -> RampState | None:
    """The ramp in the run's latest checkpoint, if it belongs to the anneal that started at ``started``."""
    store = CheckpointStore(run.checkpoints_path)
    latest = store.latest()
    if latest is None:
        return None
    state = store.load_attrs(latest).get("anneal")
    if not isinstance(state, dict) or state.get("started") != started:
        return None
    return RampState.from_json(state)


def stop(run_arg: str, keep: bool) -> dict[str, Any]:
    """End the anneal under way: ``keep`` makes the change part of the run's game, else it is taken out."""
    run = RunDir.open(run_arg)
    recipe = run.load_recipe()
    change = recipe.anneal.change
    if not change:
        raise BadInput(
            f"{run_arg}: no anneal under way (start one with `fivectl anneal start {run_arg} --change NAME`)"
        )
    meta = run.meta.get(ANNEAL_META) or {}
    ramp = checkpoint_ramp(run, meta.get("started"))
    data = recipe.to_dict()
    data["anneal"]["change"] = ""
    if keep:
        data["anneal"]["kept"] = [*recipe.anneal.kept, change]
    new = recipe_from_dict(data, source=str(run.recipe_path))
    ended = {
        **meta,
        "change": change,
        "ended": now_iso(),
        "outcome": "keep" if keep else "drop",
        "ramp": ramp.to_json() if ramp is not None else None,
    }
    # The recipe first: once it no longer names the change, training stops annealing it; run.json then records
    # the end (a crash in between leaves a stale `anneal` entry that nothing reads and the next start replaces).
    run.save_recipe(new)
    history = [*run.meta.get(HISTORY_META, []), ended]
    run.update_meta(**{ANNEAL_META: None, HISTORY_META: history, "game_changes": list(new.anneal.kept)})
    return {
        "run": str(run.path),
        "change": change,
        "outcome": ended["outcome"],
        "fraction": ramp.fraction if ramp is not None else 0.0,
        "kept": list(new.anneal.kept),
    }


def status(run_arg: str) -> dict[str, Any]:
    """The anneal under way (else the last one that ended): settings, ramp, guard history and the curve."""
    run = RunDir.open(run_arg)
    recipe = run.load_recipe()
    meta = run.meta.get(ANNEAL_META)
    if recipe.anneal.change and isinstance(meta, dict):
        ramp = checkpoint_ramp(run, meta.get("started"))
        entry = {**meta, "change": recipe.anneal.change, "state": "under way"}
        settings = {
            "over_samples": recipe.anneal.over_samples,
            "guard": recipe.anneal.guard,
            "slowdown": recipe.anneal.slowdown,
            "every_versions": guard_cadence(recipe)[0],
        }
    else:
        history = run.meta.get(HISTORY_META) or []
        if not history:
            raise BadInput(
                f"{run_arg}: no anneal under way or ended (start one with `fivectl anneal start {run_arg} "
                "--change NAME`)"
            )
        last = history[-1]
        ramp = RampState.from_json(last["ramp"]) if last.get("ramp") else None
        entry = {**{k: v for k, v in last.items() if k != "ramp"}, "state": f"ended ({last['outcome']})"}
        settings = {}
        if ramp is not None:
            settings = {"over_samples": ramp.over, "guard": ramp.guard, "slowdown": ramp.slowdown}
    out: dict[str, Any] = {
        "run": str(run.path),
        **entry,
        "settings": settings,
        "kept": list(recipe.anneal.kept),
        "trained": ramp is not None,
        "fraction": ramp.fraction if ramp is not None else 0.0,
    }
    if ramp is not None:
        out.update(
            speed=ramp.speed,
            last_good=ramp.last_good,
            reverts=ramp.reverts,
            start_samples=ramp.start_samples,
            start_version=ramp.start_version,
            samples=ramp.samples,
            pending_guard=ramp.pending,
            guard_history=[e.__dict__ for e in ramp.history],
        )
    out["curve"] = fraction_curve(run, ramp)
    return out


def fraction_curve(run: RunDir, ramp: RampState | None) -> dict[str, list]:
    """The fraction (and the share of samples under the change) per logged iteration of this anneal."""
    from fivectl.store.metrics import MetricsLog

    empty: dict[str, list] = {"samples": [], "fraction": [], "variant_share": []}
    if ramp is None:
        return empty
    try:
        table = MetricsLog(run.metrics_path).read()
    except BadInput:
        return empty
    if "anneal_fraction" not in table.column_names:
        return empty
    rows = [
        r
        for r in table.select(
            [c for c in ("samples", "anneal_fraction", "anneal_variant_share") if c in table.column_names]
        ).to_pylist()
        if r["anneal_fraction"] is not None and r["samples"] > ramp.start_samples
    ]
    return {
        "samples": [r["samples"] for r in rows],
        "fraction": [r["anneal_fraction"] for r in rows],
        "variant_share": [r.get("anneal_variant_share") for r in rows],
    }
