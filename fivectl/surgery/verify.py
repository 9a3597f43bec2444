"""``surgery verify``: replay the parent run's recorded rollouts through the parent's and the child's networks.

Each stored fragment (Arrow, ``rollouts/``: observations, the actions taken, game starts) is scored by both
networks from a zero LSTM state: the log-probability of the actions taken, the value and the win probability.
The child sees the same observations rewritten for its schema (``obsmap``): inputs the parent never had are
random, retired fields are at their constants. add-obs and widen promise the same function, so their largest
difference must stay within ``TOLERANCE``; retire changes it by design, and verify reports by how much.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fivectl.errors import BadInput
from fivectl.evaluate.policy_agent import load_policy
from fivectl.model import PolicyNet
from fivectl.schema.spec import ObsSchema
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rollouts import read_rollouts, read_schema_json
from fivectl.store.run_spec import resolve_version, split_run_spec
from fivectl.store.rundir import RunDir
from fivectl.surgery.lineage import last_surgery, parent_path
from fivectl.surgery.obsmap import obs_for_schema
from fivectl.surgery.schemas import superset_errors

TOLERANCE = 1e-5
OUTPUTS = ("logprob", "value", "win_prob")


def fragment_inputs(arrays: dict[str, np.ndarray], schema: ObsSchema) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """(obs [T, B, ...], actions [T, B, 4], first [T, B]) of one stored fragment."""
    obs = {k: torch.from_numpy(np.array(arrays[f"obs.{k}"])) for k in schema.array_specs()}
    actions = torch.from_numpy(np.array(arrays["actions"])).long().clamp(min=0)
    return obs, actions, torch.from_numpy(np.array(arrays["first"]))


@torch.no_grad()
def scores(net: PolicyNet, obs: dict, actions: torch.Tensor, first: torch.Tensor) -> dict[str, torch.Tensor]:
    out = net.evaluate(obs, actions, net.initial_state(first.shape[1]), first)
    return {"logprob": out.logprob, "value": out.value, "win_prob": torch.sigmoid(out.win_logit)}


def resolve_pair(child_spec: str, against: str | None) -> tuple[RunDir, int, Path, int, dict | None]:
    """(child run, child version, parent path, parent version, the surgery's lineage entry)."""
    child_path, child_version = split_run_spec(child_spec)
    child = RunDir.open(child_path)
    entry = last_surgery(child)
    if against is None and entry is None:
        raise BadInput(f"{child_path}: not made by a surgery (no lineage); give --against RUN@VERSION")
    if against is not None:
        parent, version = split_run_spec(against)
        parent_version = resolve_version(CheckpointStore(RunDir.open(parent).checkpoints_path), version, against)
    else:
        parent, parent_version = parent_path(child, entry), int(entry["parent_version"])
        if not RunDir.is_run(parent):
            raise BadInput(f"{child_path}: its parent run {parent} is gone; give --against RUN@VERSION")
    store = CheckpointStore(child.checkpoints_path)
    if child_version == "latest" and entry is not None:
        number = int(entry["version"])
        if number not in store.versions():
            raise BadInput(f"{child_path}: the operated checkpoint v{number} was pruned; give RUN2@VERSION")
    else:
        number = resolve_version(store, child_version, child_spec)
    return child, number, parent, parent_version, entry


def rollout_sources(parent: Path, schema: ObsSchema) -> Iterator[tuple[ObsSchema, dict[str, np.ndarray]]]:
    """Stored fragments whose observations ``schema`` can be fed: the parent's own, then its ancestors' along
    the lineage (a run made by a surgery has no rollouts until it trains), each with the schema it was encoded
    with."""
    run: RunDir | None = RunDir.open(parent)
    while run is not None:
        for fragment in read_rollouts(run.rollouts_path):
            encoded = schema_of_file(fragment.file)
            if encoded is None or superset_errors(encoded, schema, ignore=("retired", "constant")):
                continue
            if all(f"obs.{k}" in fragment.arrays for k in encoded.array_specs()):
                yield encoded, fragment.arrays
        entry = last_surgery(run)
        ancestor = parent_path(run, entry) if entry is not None else None
        run = RunDir.open(ancestor) if ancestor is not None and RunDir.is_run(ancestor) else None


@functools.lru_cache(maxsize=64)
def schema_of_file(path: Path) -> ObsSchema | None:
    """The schema a rollout file was encoded with (read once per file, not per fragment)."""
    text = read_schema_json(path)
    return ObsSchema.from_json(text) if text else None


def verify(child_spec: str, against: str | None = None, fragments: int = 8, seed: int = 0) -> dict[str, Any]:
    child_run, child_version, parent, parent_version, entry = resolve_pair(child_spec, against)
    parent_net, parent_attrs, _ = load_policy(parent, parent_version)
    child_net, child_attrs, _ = load_policy(child_run.path, child_version)
    old, new = parent_net.schema, child_net.schema
    generator = torch.Generator().manual_seed(seed)
    worst = dict.fromkeys(OUTPUTS, 0.0)
    used = samples = 0
    for encoded, arrays in rollout_sources(parent, old):
        if used >= fragments:
            break
        obs, actions, first = fragment_inputs(arrays, encoded)
        if first.shape[1] % parent_net.team_size:
            continue
        if encoded != old:  # an ancestor's rollout: what the parent itself would have been fed
            obs = obs_for_schema(obs, encoded, old, generator)
        want = scores(parent_net, obs, actions, first)
        got = scores(child_net, obs_for_schema(obs, old, new, generator), actions, first)
        for key in OUTPUTS:
            worst[key] = max(worst[key], float((want[key] - got[key]).abs().max()))
        used += 1
        samples += int(first.numel())
    if not used:
        raise BadInput(
            f"{parent}: no rollouts its schema v{old.version} can read, in its rollouts/ or its ancestors' "
            "(training keeps one fragment in train.rollout_save_every)"
        )
    exact = bool(entry.get("exact", True)) if entry is not None else True
    operation = entry.get("operation") if entry is not None else None
    largest = max(worst.values())
    return {
        "child": str(child_run.path),
        "child_version": child_version,
        "parent": str(parent),
        "parent_version": parent_version,
        "operation": operation,
        "fragments": used,
        "samples": samples,
        "max_abs_delta": worst,
        "tolerance": TOLERANCE if exact else None,
        "ok": (largest <= TOLERANCE) if exact else True,
        "schema_before": int(parent_attrs["schema_version"]),
        "schema_after": int(child_attrs["schema_version"]),
    }
