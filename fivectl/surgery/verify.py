"""``surgery verify``: replay the parent run's recorded rollouts through the parent's and the child's networks.

Each stored fragment (Arrow, ``rollouts/``: observations, the actions taken, game starts) is scored by both
networks from a zero LSTM state: the log-probability of the actions taken, the value and the win probability.
A run that kept no rollouts its schema can read (a short run keeps one fragment in ``train.rollout_save_every``,
so it may have none) is verified on fresh games instead: the parent plays itself in its own recipe's game, and
what it saw and did is cut into fragments of the same form.
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
from fivectl.sim import HOLD, MobaEnv
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rollouts import read_rollouts, read_schema_json
from fivectl.store.run_spec import resolve_version, split_run_spec
from fivectl.store.rundir import RunDir
from fivectl.surgery.lineage import last_surgery, parent_path
from fivectl.surgery.obsmap import obs_for_schema
from fivectl.surgery.schemas import superset_errors

TOLERANCE = 1e-5
OUTPUTS = ("logprob", "value", "win_prob")
FRESH_GAMES = 8
"""Games the parent plays against itself when it has no rollouts to replay."""
FRESH_STEPS = 256
"""Decisions of each fresh game that are compared (the game's start and a good part of its laning)."""
FRESH_FRAGMENT = 64
"""Decisions per fragment of the fresh games: each is scored from a zero LSTM state, as a stored fragment is."""


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


@torch.no_grad()
def fresh_fragments(
    parent: Path, net: PolicyNet, games: int, steps: int, seed: int
) -> Iterator[dict[str, np.ndarray]]:
    """Fragments (``obs.*``, ``actions``, ``first``; [T, agents, ...]) of ``games`` games in which the parent's
    network plays both sides of its recipe's game (the change the run keeps included), ``steps`` decisions in all,
    encoded with the network's own schema. Decisions as in training: one every ``model.decide_every`` steps, the
    heroes holding their orders in between."""
    recipe = RunDir.open(parent).load_recipe()
    try:
        env = MobaEnv(recipe.game, games, seed, net.schema)
    except BadInput as e:
        raise BadInput(f"{parent}: no rollouts to replay, and its game cannot be played for fresh ones: {e}") from None
    if recipe.anneal.kept:
        env.set_change(recipe.anneal.kept[-1], 1.0)
    agents = games * env.agents_per_game
    obs = env.reset()
    state = net.initial_state(agents)
    first = np.ones(agents, dtype=bool)
    held = np.zeros((games, env.agents_per_game, 4), dtype=np.int32)
    held[..., 0] = HOLD
    with torch.random.fork_rng():  # the sampled actions are seeded without touching the caller's stream
        torch.manual_seed(seed)
        done_steps = 0
        while done_steps < steps:
            rows: list[tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]] = []
            for _ in range(min(FRESH_FRAGMENT, steps - done_steps)):
                flat = {k: np.ascontiguousarray(v.reshape(agents, *v.shape[2:])) for k, v in obs.items()}
                out = net.act({k: torch.from_numpy(v) for k, v in flat.items()}, state, torch.from_numpy(first))
                actions = out.actions.numpy().astype(np.int32)
                rows.append((flat, actions, first))
                state = out.state
                obs, ended = play_decision(env, actions.reshape(held.shape), held, net.cfg.decide_every)
                first = np.repeat(ended, env.agents_per_game)
            done_steps += len(rows)
            fragment = {f"obs.{k}": np.stack([r[0][k] for r in rows]) for k in rows[0][0]}
            fragment["actions"] = np.stack([r[1] for r in rows])
            fragment["first"] = np.stack([r[2] for r in rows])
            yield fragment


def play_decision(
    env: MobaEnv, actions: np.ndarray, held: np.ndarray, decide_every: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One decision: ``actions`` for a step, then ``held`` orders until the next decision. Returns the last
    step's observation and which games ended during the decision (the automatic reset started new ones)."""
    ended = np.zeros(env.num_games, dtype=bool)
    for sub in range(decide_every):
        last = sub == decide_every - 1
        obs, _, done, _ = env.step(actions if sub == 0 else held, masks_only=not last)
        ended |= np.asarray(done, dtype=bool)
    return obs, ended


def compare(
    parent_net: PolicyNet,
    child_net: PolicyNet,
    sources: Iterator[tuple[ObsSchema, dict[str, np.ndarray]]],
    fragments: int,
    generator: torch.Generator,
) -> tuple[dict[str, float], int, int]:
    """The largest difference of each output over up to ``fragments`` fragments; (worst, fragments, samples)."""
    old, new = parent_net.schema, child_net.schema
    worst = dict.fromkeys(OUTPUTS, 0.0)
    used = samples = 0
    for encoded, arrays in sources:
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
    return worst, used, samples


def verify(
    child_spec: str,
    against: str | None = None,
    fragments: int = 8,
    seed: int = 0,
    games: int = FRESH_GAMES,
    steps: int = FRESH_STEPS,
) -> dict[str, Any]:
    """Compare the child's outputs with the parent's on the parent's rollouts, or on ``games`` fresh games of
    ``steps`` decisions when it has none its schema can read."""
    if fragments < 1 or games < 1 or steps < 1:
        raise BadInput(f"fragments, games and steps must be >= 1, got {fragments}, {games}, {steps}")
    child_run, child_version, parent, parent_version, entry = resolve_pair(child_spec, against)
    parent_net, parent_attrs, _ = load_policy(parent, parent_version)
    child_net, child_attrs, _ = load_policy(child_run.path, child_version)
    generator = torch.Generator().manual_seed(seed)
    old = parent_net.schema
    worst, used, samples = compare(parent_net, child_net, rollout_sources(parent, old), fragments, generator)
    fresh = None
    if not used:
        played = ((old, f) for f in fresh_fragments(parent, parent_net, games, steps, seed))
        worst, used, samples = compare(parent_net, child_net, played, steps, generator)
        fresh = {"games": games, "steps": steps}
    if not used:
        raise BadInput(f"{parent}: no observations to compare on (team size {parent_net.team_size})")
    exact = bool(entry.get("exact", True)) if entry is not None else True
    operation = entry.get("operation") if entry is not None else None
    largest = max(worst.values())
    return {
        "child": str(child_run.path),
        "child_version": child_version,
        "parent": str(parent),
        "parent_version": parent_version,
        "operation": operation,
        "source": "rollouts" if fresh is None else "fresh games",
        "fresh_games": fresh,
        "fragments": used,
        "samples": samples,
        "max_abs_delta": worst,
        "tolerance": TOLERANCE if exact else None,
        "ok": (largest <= TOLERANCE) if exact else True,
        "schema_before": int(parent_attrs["schema_version"]),
        "schema_after": int(child_attrs["schema_version"]),
    }
