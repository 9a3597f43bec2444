"""A surgery on a whole run: every kept checkpoint (the opponent pool with them) into a new run directory.

``RUN`` or ``RUN@VERSION`` is read, never written. The child run is built in a hidden sibling directory
(``.NAME.surgery-PID-XXXX``) and renamed to ``--out`` only when complete, so a kill at any moment leaves the
parent intact and either no ``--out`` or a complete one; leftovers of a killed surgery are removed by the next
surgery to the same ``--out``.

Every version of the parent up to the operated one is converted with the same plan and keeps its number, so the
opponent pool (which names versions) is valid in the child, workers load opponents of the new shape, and
``fivectl train --run OUT --resume`` continues the version numbers. Before anything is written, every version is
checked to be convertible (same schema and model as the operated one; every pool member present).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fivectl.config import ModelConfig, Recipe, recipe_from_dict
from fivectl.config.loader import to_dict
from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema
from fivectl.store.atomic import fsync_dir
from fivectl.store.checkpoint import PLAYABLE_SECTIONS, Checkpoint, CheckpointStore
from fivectl.store.metrics import MetricsLog
from fivectl.store.run_spec import resolve_version, split_run_spec
from fivectl.store.rundir import RunDir
from fivectl.store.state_codec import flatten_state, unflatten_state
from fivectl.surgery.lineage import lineage_for_child
from fivectl.surgery.plan import Plan, apply_model, apply_optimizer, changed_tensors, parameter_counts

STAGE_MARK = ".surgery-"


@dataclass
class Parent:
    """The operated checkpoint of the parent run and what a plan is built from."""

    run: RunDir
    recipe: Recipe
    store: CheckpointStore
    version: int
    attrs: dict[str, Any]
    schema: ObsSchema
    model: ModelConfig
    team_size: int
    state: dict[str, torch.Tensor]
    checkpoint: Checkpoint  # the operated version, whole (it is converted too: read once)


@dataclass
class SurgeryResult:
    out: Path
    parent: Path
    version: int
    versions: list[int]
    plan: Plan
    changed: list[dict[str, Any]]
    parameters_before: int
    parameters_after: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.plan.operation,
            "args": self.plan.args,
            "parent": str(self.parent),
            "parent_version": self.version,
            "out": str(self.out),
            "versions": self.versions,
            "schema_before": self.plan.schema_before.version,
            "schema_after": self.plan.schema_after.version,
            "parameters_before": self.parameters_before,
            "parameters_after": self.parameters_after,
            "changed": self.changed,
            "seconds": round(self.seconds, 3),
        }


def model_state(arrays: dict[str, np.ndarray], attrs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The parent's tensors, read only: loaded arrays are used in place when torch can take them (a paper-scale
    model is 640 MB; a copy costs seconds)."""
    return {k: torch.from_numpy(a if (a := arrays[k]).flags.writeable else np.array(a)) for k in attrs["model_keys"]}


def open_parent(spec: str) -> Parent:
    path, version = split_run_spec(spec)
    run = RunDir.open(path)
    store = CheckpointStore(run.checkpoints_path)
    number = resolve_version(store, version, spec)
    ckpt = store.load(number)
    attrs = ckpt.attrs
    model = recipe_from_dict({"model": attrs["model_config"]}, source=f"checkpoint v{number}").model
    return Parent(
        run=run,
        recipe=run.load_recipe(),
        store=store,
        version=number,
        attrs=attrs,
        schema=ObsSchema.from_json(attrs["schema"]),
        model=model,
        team_size=int(attrs["team_size"]),
        state=model_state(ckpt.arrays["model"], attrs),
        checkpoint=ckpt,
    )


def versions_to_convert(parent: Parent) -> tuple[list[int], dict[int, bool]]:
    """Every kept version up to the operated one, and which of them are slimmed (model only). Raises BadInput
    when one of them, or a member of the opponent pool, cannot be given the same surgery."""
    info = {i.version: i.slim for i in parent.store.info()}
    kept = sorted(v for v in info if v <= parent.version)
    pool = [int(v) for v in parent.attrs.get("opponent_pool", {}).get("versions", [])]
    missing = [v for v in pool if v not in info]
    if missing:
        raise BadInput(
            f"opponent pool version v{missing[0]} is not among the run's checkpoints: it cannot be converted "
            "and workers could not load it"
        )
    want = (json.loads(parent.attrs["schema"]), parent.attrs["model_config"], parent.team_size)
    for v in kept:
        attrs = parent.store.load_attrs(v)
        have = (json.loads(attrs.get("schema", "null")), attrs.get("model_config"), int(attrs.get("team_size", -1)))
        if have != want:
            what = "observation schema" if have[0] != want[0] else "model or team size"
            raise BadInput(
                f"checkpoint v{v} was written with another {what} than v{parent.version}; the same surgery cannot "
                "convert it (operate on the version that matches it, or prune it)"
            )
    return kept, info


def child_recipe(parent: Parent, plan: Plan) -> Recipe:
    model = replace(plan.model_after, schema_version=plan.schema_after.version)
    return replace(parent.recipe, model=model)


def convert_version(plan: Plan, ckpt: Checkpoint) -> tuple[dict, dict]:
    """One checkpoint of the parent -> (arrays, attrs) of the child's checkpoint of the same number."""
    attrs = dict(ckpt.attrs)
    state = apply_model(plan, model_state(ckpt.arrays["model"], attrs))
    arrays = dict(ckpt.arrays)
    arrays["model"] = {k: v.numpy() for k, v in state.items()}
    if arrays.get("model_average"):  # the weights' moving average is the same network: the same operation
        average = apply_model(plan, model_state(arrays["model_average"], attrs))
        arrays["model_average"] = {k: v.numpy() for k, v in average.items()}
    if "optimizer" in arrays:
        learner = apply_optimizer(
            plan, unflatten_state(arrays["optimizer"], attrs["optimizer_meta"]), attrs["model_keys"]
        )
        arrays["optimizer"], attrs["optimizer_meta"] = flatten_state(learner)
    attrs.update(
        schema_version=plan.schema_after.version,
        schema=plan.schema_after.to_json(),
        model_config=to_dict(replace(plan.model_after, schema_version=plan.schema_after.version)),
        model_keys=list(state),
        surgery={"operation": plan.operation, "version": ckpt.version},
    )
    return arrays, attrs


def with_warm_period(attrs: dict, warmup_versions: int) -> dict:
    """The resume point starts its learning-rate-0 warm period (paper B, smooth restart)."""
    counters = dict(attrs["counters"])
    counters["warmup_end_version"] = int(counters["version"]) + int(warmup_versions)
    return {**attrs, "counters": counters}


def remove_stale_stages(out: Path) -> None:
    """Leftovers of killed surgeries to the same ``--out`` (their process is gone)."""
    for stage in out.parent.glob(f".{out.name}{STAGE_MARK}*"):
        pid = stage.name.removeprefix(f".{out.name}{STAGE_MARK}").split("-")[0]
        if pid.isdigit() and _alive(int(pid)):
            continue
        shutil.rmtree(stage, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()


def check_out(out: Path, parent: Path) -> None:
    if out.exists():
        raise BadInput(f"--out {out}: already exists (a surgery writes a new run directory)")
    if out.resolve().is_relative_to(parent.resolve()):
        raise BadInput(f"--out {out}: inside the parent run; a surgery never writes into its parent")
    if not out.parent.exists():
        raise BadInput(f"--out {out}: its folder {out.parent} does not exist")


def operate(
    spec: str,
    out: str | Path,
    build_plan: Callable[[Parent], Plan],
    on_version: Callable[[int], None] | None = None,
) -> SurgeryResult:
    """Run a surgery from ``spec`` (RUN or RUN@VERSION) into the new run directory ``out``."""
    t0 = time.perf_counter()
    out = Path(out)
    parent = open_parent(spec)
    check_out(out, parent.run.path)
    plan = build_plan(parent)
    versions, info = versions_to_convert(parent)
    remove_stale_stages(out)
    stage = out.parent / f".{out.name}{STAGE_MARK}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        child_store = CheckpointStore(stage / "checkpoints.zarr")
        for v in versions:  # ascending: the operated version is saved last and becomes the pointer
            if v == parent.version:
                ckpt = parent.checkpoint
            else:
                ckpt = parent.store.load(v, sections=PLAYABLE_SECTIONS if info[v] else None)
            arrays, attrs = convert_version(plan, ckpt)
            del ckpt
            if v == parent.version:
                attrs = with_warm_period(attrs, parent.recipe.train.warmup_versions)
                changed = changed_tensors(plan, parent.state, {k: torch.from_numpy(a) for k, a in arrays["model"].items()})
            child_store.save(v, arrays, attrs)
            if on_version is not None:
                on_version(v)
        counts = parameter_counts(plan, parent.state)
        if parent.run.metrics_path.is_dir():  # the learning curve goes on, up to the operated checkpoint
            shutil.copytree(parent.run.metrics_path, stage / "metrics")
            MetricsLog(stage / "metrics").truncate_after(int(parent.attrs["counters"].get("iteration", 0)))
        child = RunDir.create(stage, child_recipe(parent, plan), parent.run.meta.get("recipe_source", ""))
        child.update_meta(
            schema=json.loads(plan.schema_after.to_json()),
            latest_version=parent.version,
            samples=int(parent.attrs["counters"]["samples"]),
            lineage=lineage_for_child(parent, plan, out, versions, counts),
        )
        fsync_dir(stage)
        os.rename(stage, out)  # the commit point: --out appears complete or not at all
        fsync_dir(out.parent)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return SurgeryResult(
        out=out,
        parent=parent.run.path,
        version=parent.version,
        versions=versions,
        plan=plan,
        changed=changed,
        parameters_before=counts[0],
        parameters_after=counts[1],
        seconds=time.perf_counter() - t0,
    )


__all__ = ["Parent", "SurgeryResult", "operate", "open_parent", "split_run_spec"]
