"""Agents that play a trained checkpoint: specs ``RUN_DIR@latest`` and ``RUN_DIR@VERSION``.

A checkpoint of a run whose recipe keeps a moving average of the weights (``train.average_samples``) holds two
networks: the trained weights (``model``, what the run's workers and opponent pool play) and their average
(``model_average``). A spec plays the average when the checkpoint has one; ``:trained`` or ``:average`` after
the version chooses (``RUN_DIR@latest:trained``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from fivectl.config import ModelConfig, recipe_from_dict
from fivectl.errors import BadInput
from fivectl.evaluate.agents import register_agent_kind, select_team
from fivectl.model import PolicyNet
from fivectl.runtime.recorder import objective_columns
from fivectl.schema import ObsSchema
from fivectl.sim import HOLD, OBJECTIVES
from fivectl.store.checkpoint import PLAYABLE_SECTIONS, CheckpointStore
from fivectl.store.rundir import RunDir

WEIGHTS = ("auto", "trained", "average")  # auto: the average when the checkpoint has one


def split_spec(spec: str) -> tuple[Path, str, str]:
    """``RUN_DIR@VERSION[:WEIGHTS]`` -> (run directory, version, weights)."""
    path, _, rest = spec.rpartition("@")
    version, colon, weights = rest.partition(":")
    if not path or not version:
        raise BadInput(f"agent {spec!r}: expected RUN_DIR@latest or RUN_DIR@VERSION")
    if colon and weights not in WEIGHTS[1:]:
        raise BadInput(f"agent {spec!r}: after the version, expected :trained or :average, got {':' + weights!r}")
    return Path(path), version, weights or "auto"


def resolve_version(store: CheckpointStore, version: str, spec: str) -> int | None:
    """The checkpoint number a spec names, or None for ``latest``: the newest version that loads, found by
    :meth:`CheckpointStore.load` (past corrupt ones, with a ``CheckpointFallbackWarning``, as training resumes)."""
    versions = store.versions()
    if not versions:
        raise BadInput(f"agent {spec!r}: the run has no checkpoint yet")
    if version == "latest":
        return None
    try:
        number = int(version.lstrip("v"))
    except ValueError:
        raise BadInput(f"agent {spec!r}: version must be 'latest' or a number, got {version!r}") from None
    if number not in versions:
        shown = ", ".join(map(str, versions[-10:]))
        raise BadInput(f"agent {spec!r}: no checkpoint v{number} (available: {shown})")
    return number


def load_policy(
    run_dir: Path, version: int | None, weights: str = "auto"
) -> tuple[PolicyNet, dict[str, Any], int]:
    """The network of checkpoint ``version`` of a run (None: the newest good one), with the checkpoint's own
    schema and model config, and the version loaded. An explicit version that is corrupt is an error.
    ``weights``: one of :data:`WEIGHTS`."""
    store = CheckpointStore(RunDir.open(run_dir).checkpoints_path)
    ckpt = store.load(version, sections=PLAYABLE_SECTIONS)
    has_average = bool(ckpt.arrays.get("model_average"))
    section = "model_average" if weights == "average" or (weights == "auto" and has_average) else "model"
    if not ckpt.arrays.get(section):
        raise BadInput(
            f"{run_dir}: checkpoint v{ckpt.version} holds no weight average (its recipe has "
            "train.average_samples = 0); play its trained weights with :trained or no suffix"
        )
    attrs = ckpt.attrs
    schema = ObsSchema.from_json(attrs["schema"])
    model_cfg = recipe_from_dict({"model": attrs["model_config"]}).model
    assert isinstance(model_cfg, ModelConfig)
    net = PolicyNet(schema, model_cfg, int(attrs["team_size"]))
    net.load_state_dict({k: torch.from_numpy(np.array(ckpt.arrays[section][k])) for k in attrs["model_keys"]})
    net.eval()
    return net, attrs, ckpt.version


class PolicyAgent:
    """A checkpoint's policy, sampling its actions (as in training); LSTM state per hero, reset at game starts."""

    # evaluate match --record: keep what the forward pass that chose the actions predicted (no extra pass)
    record_predictions = False
    predictions: dict[str, np.ndarray] | None = None

    def __init__(self, spec: str, deterministic: bool = False):
        run_dir, version, weights = split_spec(spec)
        run = RunDir.open(run_dir)
        wanted = resolve_version(CheckpointStore(run.checkpoints_path), version, spec)
        self.spec = spec
        self.net, attrs, self.version = load_policy(run_dir, wanted, weights)
        self.schema_version = int(attrs["schema_version"])
        self.team_size = int(attrs["team_size"])
        kept = run.load_recipe().anneal.kept
        self.game_change: str | None = kept[-1] if kept else None
        """The change the run's game runs in every game (``fivectl anneal stop --keep``), or None."""
        self.deterministic = deterministic
        self.state = None
        self.since_decision = np.zeros(0, dtype=np.int64)

    def reset(self, num_games: int, seed: int | None = None) -> None:
        self.state = self.net.initial_state(num_games * self.team_size)
        self.since_decision = np.zeros(num_games, dtype=np.int64)
        if seed is not None:
            torch.manual_seed(seed)

    @property
    def decide_every(self) -> int:
        return self.net.cfg.decide_every

    def act(self, env: Any, obs: dict[str, np.ndarray], team: np.ndarray, first: np.ndarray) -> np.ndarray:
        return self.act_rows(env, obs, team, first, np.arange(len(team)))

    def act_rows(
        self, env: Any, obs: dict[str, np.ndarray], team: np.ndarray, first: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        """Actions of games ``rows`` only; the LSTM state of the other games is kept for when they play again.

        With ``model.decide_every`` = n the policy decides at a game's start and every n steps after, as in
        training, and holds its orders (``HOLD``) in between.
        """
        rows = np.asarray(rows)
        self.predictions = None
        started = np.asarray(first, dtype=bool)[rows]
        since = np.where(started, 0, self.since_decision[rows])
        self.since_decision[rows] = since + 1
        deciding = since % self.decide_every == 0
        actions = np.zeros((len(rows), self.team_size, 4), dtype=np.int32)
        actions[..., 0] = HOLD
        if deciding.any():
            actions[deciding] = self.decide(obs, team, first, rows[deciding])
            if self.predictions is not None:  # positions among ``rows`` of the games that decided
                self.predictions["rows"] = np.flatnonzero(deciding)
        return actions

    @torch.inference_mode()
    def decide(
        self, obs: dict[str, np.ndarray], team: np.ndarray, first: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        """One forward pass over games ``rows``: their heroes' actions [len(rows), k, 4]."""
        k = self.team_size
        mine = select_team({key: v[rows] for key, v in obs.items()}, team[rows], k)  # [R, k, ...]
        games = len(rows)
        flat = {
            key: torch.from_numpy(np.ascontiguousarray(v.reshape(games * k, *v.shape[2:])))
            for key, v in mine.items()
        }
        first_rows = torch.from_numpy(np.repeat(np.asarray(first, dtype=bool)[rows], k))
        heroes = torch.from_numpy((np.asarray(rows)[:, None] * k + np.arange(k)).ravel())
        h, c = self.state
        out = self.net.act(
            flat,
            (h[:, heroes], c[:, heroes]),
            first_rows,
            deterministic=self.deterministic,
            with_aux=self.record_predictions,
        )
        h[:, heroes], c[:, heroes] = out.state
        if self.record_predictions:
            self.predictions = self._predictions_of(out, rows)
        return out.actions.numpy().astype(np.int32).reshape(games, k, 4)

    def _predictions_of(self, out, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Value, win probability and objective predictions [len(rows), k(, objectives)] of one forward pass,
        objectives in the replay's columns (``sim.objectives.OBJECTIVES``; NaN where the model has none)."""
        games, k = len(rows), self.team_size
        objectives = np.full((games, k, len(OBJECTIVES)), np.nan, dtype=np.float32)
        if out.aux is not None and "objectives" in out.aux:
            columns = objective_columns(self.net.cfg.aux_objectives)
            objectives[..., columns] = out.aux["objectives"].numpy().reshape(games, k, -1)
        return {
            "slots": np.asarray(rows),
            "value": out.value.numpy().reshape(games, k),
            "win_prob": out.win_prob.numpy().reshape(games, k),
            "objectives": objectives,
        }


def is_checkpoint_spec(spec: str) -> bool:
    return "@" in spec and not spec.startswith("bot:")


register_agent_kind(
    "checkpoint",
    is_checkpoint_spec,
    PolicyAgent,
    examples=("RUN_DIR@latest", "RUN_DIR@VERSION", "RUN_DIR@VERSION:trained"),
)
