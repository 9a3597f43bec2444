"""Recording games of a batched ``MobaEnv`` to replay files (``fivectl.store.replay``), as they are played.

The caller plays as usual and tells the recorder about every step::

    recorder = GameRecorder(env, out_dir)
    obs = env.reset()
    recorder.start(slots, names, headers)            # record the games now starting in these slots
    ...
    obs, rewards, done, info = env.step(actions)
    recorder.step(actions, done, info, predictions)  # returns the replay files of the games that ended

Rows are buffered per slot in preallocated ``[slots, chunk, ...]`` arrays (a few array copies per step for all the
recorded games together, nothing per unit in Python) and written as one compressed record batch per game every
``chunk`` steps, so memory stays bounded however long a game lasts. A game that ends is written with its final
frame (``env.final``); a slot's next game is recorded only if ``start`` is called for it again.

``predictions`` (optional): ``value``, ``win_prob`` [slots, heroes] and ``objectives`` [slots, heroes,
len(OBJECTIVES)] of the policies at this step, NaN where no policy predicted (scripted agents, objectives a model
does not predict). A policy that decides every few steps predicts only when it decides: its last prediction
stands on the steps in between.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fivectl import __version__
from fivectl.sim import CORE_STATE_COLUMNS as ST
from fivectl.sim import OBJECTIVES, hero_networth
from fivectl.store.replay import (
    HERO_COLUMNS,
    NO_ACTION,
    PREDICTION_COLUMNS,
    SUFFIX,
    UNIT_COLUMNS,
    ReplayWriter,
    row_shapes,
)

CHUNK_STEPS = 256


def empty_predictions(num_games: int, n_heroes: int) -> dict[str, np.ndarray]:
    """Prediction arrays full of NaN (no policy predicted), to be filled per agent."""
    return {
        "value": np.full((num_games, n_heroes), np.nan, np.float32),
        "win_prob": np.full((num_games, n_heroes), np.nan, np.float32),
        "objectives": np.full((num_games, n_heroes, len(OBJECTIVES)), np.nan, np.float32),
    }


def objective_columns(names: Sequence[str]) -> np.ndarray:
    """Column of each of a model's ``aux_objectives`` in the replay's ``objectives`` (all of OBJECTIVES)."""
    return np.array([OBJECTIVES.index(n) for n in names], dtype=np.int64)


def game_header(env, slot: int) -> dict:
    """What the game itself says about the game starting in ``slot``: enough to re-simulate it."""
    hero_names = _hero_names()
    return {
        "fivectl_version": __version__,
        "game": dataclasses.asdict(env.cfg),
        "schema_version": int(env.schema.version),
        # the schema itself: a run operated by surgery reads a grown or retired one (its version number unchanged)
        "schema": json.loads(env.schema.to_json()),
        # the environment change new games drew with (``fivectl anneal``): with start_rng it re-draws the variant
        "change": env.change,
        "change_fraction": env.change_fraction if env.change is not None else 0.0,
        "variant": bool(env.variant[slot]) if env.change is not None else False,
        "primary_actions": list(env.schema.action.primary),
        "env_seed": int(env.seed),
        "slot": int(slot),
        # uint64 as a string: JSON readers (the HTML viewer) would round a large integer
        "start_rng": str(int(env.start_rng[slot])),
        "units": int(env.layout.n_units),
        "heroes": int(env.agents_per_game),
        "team_size": int(env.team_size),
        "objectives": list(OBJECTIVES),
        "lineup": [hero_names[int(h)] for h in env.state.hero_id[slot]],
        "layout": {
            "bld_start": int(env.layout.bld_start),
            "neu_start": int(env.layout.neu_start),
            "creep_start": int(env.layout.creep_start),
        },
    }


# The state columns grouped by the core array they come from (``sim/state.py``), so that one frame of all the
# recorded games is a handful of array operations; the named columns are split out once per chunk.
UNIT_FLOATS = ("x", "y", "hp", "max_hp")
UNIT_INTS = ("alive", "team", "utype", "target")
HERO_INTS = ("level", "kills", "deaths", "last_hits", "denies")
HERO_FLOATS = ("gold", "networth")
_UF = np.array([ST.UF_X, ST.UF_Y, ST.UF_HP, ST.UF_MAX_HP])
_UI = np.array([ST.UI_ALIVE, ST.UI_TEAM, ST.UI_UTYPE, ST.UI_TARGET])
_HI = np.array([ST.HI_LEVEL, ST.HI_KILLS, ST.HI_DEATHS, ST.HI_LAST_HITS, ST.HI_DENIES])
RAW_DTYPES = {
    "tick": np.int32,
    "unit_f": np.float32,
    "unit_i": np.int16,
    "hero_i": np.int16,
    "hero_f": np.float32,
}


def raw_frame(core, views, slots: np.ndarray) -> dict[str, np.ndarray]:
    """Games ``slots`` of a state (``env.core_state`` / ``env.state``, or ``env.final_core`` / ``env.final``):
    ``tick`` [R], ``unit_f`` [R, 4, U], ``unit_i`` [R, 4, U], ``hero_i`` [R, 5, H], ``hero_f`` [R, 2, H]."""
    rows = slots[:, None]
    unit_i = core.ui[rows, _UI]
    # a slot no unit has used since the game started (utype 0) still holds the previous game's values: zeros
    used = unit_i[:, 2:3] != 0
    networth = hero_networth(views)[slots]
    return {
        "tick": core.gi[slots, ST.GI_TICK],
        "unit_f": np.where(used, core.uf[rows, _UF], 0.0),
        "unit_i": np.where(used, unit_i, 0),
        "hero_i": core.hi[rows, _HI],
        "hero_f": np.stack([core.hf[slots, ST.HF_GOLD], networth], axis=1),
    }


def named_columns(raw: dict[str, np.ndarray], n_units: int) -> dict[str, np.ndarray]:
    """Raw frames [n, ...] (``raw_frame``) as the replay's state columns, in the replay's dtypes."""
    out = {"tick": np.asarray(raw["tick"], np.int32)}
    for group, names in (("unit_f", UNIT_FLOATS), ("unit_i", UNIT_INTS)):
        for i, name in enumerate(names):
            out[name] = raw[group][..., i, :].astype(UNIT_COLUMNS[name])
    for group, names in (("hero_i", HERO_INTS), ("hero_f", HERO_FLOATS)):
        for i, name in enumerate(names):
            if name != "level":
                out[name] = raw[group][..., i, :].astype(HERO_COLUMNS[name])
    hero_level = raw["hero_i"][..., 0, :]
    level = np.zeros((*hero_level.shape[:-1], n_units), np.int8)
    level[..., : hero_level.shape[-1]] = hero_level
    out["level"] = level
    return out


def capture_frame(core, views, slots: np.ndarray, n_units: int) -> dict[str, np.ndarray]:
    """The replay's state columns of games ``slots``: name -> [len(slots), *row shape] (``replay verify``)."""
    return named_columns(raw_frame(core, views, slots), n_units)


def _hero_names() -> tuple[str, ...]:
    from fivectl.sim import HERO_NAMES

    return HERO_NAMES


class GameRecorder:
    """Records chosen games of ``env`` into ``directory`` (see the module docstring)."""

    def __init__(self, env, directory: str | Path, chunk: int = CHUNK_STEPS):
        self.env = env
        self.directory = Path(directory)
        self.chunk = int(chunk)
        games, heroes = env.num_games, env.agents_per_game
        self.shapes = row_shapes(env.layout.n_units, heroes, len(OBJECTIVES))
        first = raw_frame(env.core_state, env.state, np.zeros(1, dtype=np.int64))
        self.raw = {
            name: np.zeros((games, self.chunk, *first[name].shape[1:]), RAW_DTYPES[name]) for name in first
        }
        self.buf = {
            name: np.zeros((games, self.chunk, *self.shapes[name][0]), self.shapes[name][1])
            for name in ("action", *PREDICTION_COLUMNS)
        }
        self.pos = np.zeros(games, dtype=np.int64)  # row of the current step in the slot's chunk
        self.steps = np.zeros(games, dtype=np.int64)
        self.recording = np.zeros(games, dtype=bool)
        self.writers: list[ReplayWriter | None] = [None] * games
        # a game's file opens at its first chunk: until then ``annotate`` may still add to its header
        self.pending: list[tuple[Path, dict] | None] = [None] * games
        self.last = empty_predictions(games, heroes)

    # ------------------------------------------------------------------ API
    def start(self, slots: Sequence[int] | np.ndarray, names: Sequence[str], headers: Sequence[dict]) -> None:
        """Record the games that have just started in ``slots`` (file ``names[i]`` + ``.arrow``), with
        ``headers[i]`` (agents, ...) merged into the game's own header."""
        slots = np.asarray(slots, dtype=np.int64)
        for slot, name, extra in zip(slots.tolist(), names, headers, strict=True):
            self._drop(slot)
            path = self.directory / (name if name.endswith(SUFFIX) else name + SUFFIX)
            self.pending[slot] = (path, {**game_header(self.env, slot), **extra})
        self.recording[slots] = True
        self.pos[slots] = 0
        self.steps[slots] = 0
        for column in self.last.values():
            column[slots] = np.nan
        self._capture(slots, final=False)

    def annotate(self, slot: int, extra: dict) -> None:
        """Add to the header of the game recorded in ``slot`` (before its first ``chunk`` steps are written)."""
        if self.pending[slot] is None:
            raise RuntimeError(f"slot {slot}: no game waiting for its header")
        self.pending[slot][1].update(extra)

    def step(
        self, actions: np.ndarray, done: np.ndarray, info: dict, predictions: dict | None = None
    ) -> list[Path]:
        """After ``env.step(actions)``: complete the recorded games' rows, capture their next frame; returns the
        replay files of the games that ended."""
        rec = np.flatnonzero(self.recording)
        if len(rec) == 0:
            return []
        pos = self.pos[rec]
        self.buf["action"][rec, pos] = np.asarray(actions)[rec]
        if predictions is not None:
            for name in PREDICTION_COLUMNS:
                new = np.asarray(predictions[name])[rec]
                self.last[name][rec] = np.where(np.isnan(new), self.last[name][rec], new)
        for name in PREDICTION_COLUMNS:
            self.buf[name][rec, pos] = self.last[name][rec]
        self.pos[rec] += 1
        self.steps[rec] += 1
        for slot in rec[self.pos[rec] == self.chunk].tolist():
            self._writer(slot).write(self._rows(slot, self.chunk))
            self.pos[slot] = 0
        ended = rec[np.asarray(done, dtype=bool)[rec]]
        self._capture(rec[~np.asarray(done, dtype=bool)[rec]], final=False)
        return self._finish(ended, info) if len(ended) else []

    def close(self) -> None:
        """Abandon the games still being recorded (their partial files are deleted)."""
        for slot in range(len(self.writers)):
            self._drop(slot)
        self.recording[:] = False

    # ------------------------------------------------------------------ internals
    def _capture(self, slots: np.ndarray, final: bool) -> None:
        """The current frame (or the final frame of games that just ended) into the current row of each slot."""
        if len(slots) == 0:
            return
        env = self.env
        core, views = (env.final_core, env.final) if final else (env.core_state, env.state)
        pos = self.pos[slots]
        for name, values in raw_frame(core, views, slots).items():
            self.raw[name][slots, pos] = values

    def _writer(self, slot: int) -> ReplayWriter:
        if self.writers[slot] is None:
            path, header = self.pending[slot]
            heroes, objectives = self.shapes["objectives"][0]
            self.writers[slot] = ReplayWriter(path, header, self.env.layout.n_units, heroes, objectives)
            self.pending[slot] = None
        return self.writers[slot]

    def _drop(self, slot: int) -> None:
        """Forget the game recorded in ``slot`` (a game cut short): its partial file is deleted."""
        if self.writers[slot] is not None:
            self.writers[slot].abandon()
        self.writers[slot] = None
        self.pending[slot] = None

    def _rows(self, slot: int, n: int) -> dict[str, np.ndarray]:
        rows = named_columns({name: raw[slot, :n] for name, raw in self.raw.items()}, self.env.layout.n_units)
        rows.update({name: column[slot, :n] for name, column in self.buf.items()})
        return rows

    def _finish(self, ended: np.ndarray, info: dict) -> list[Path]:
        self._capture(ended, final=True)
        pos = self.pos[ended]
        self.buf["action"][ended, pos] = NO_ACTION
        for name in PREDICTION_COLUMNS:
            self.buf[name][ended, pos] = np.nan
        paths = []
        for slot in ended.tolist():
            writer = self._writer(slot)
            paths.append(writer.finish(self._rows(slot, int(self.pos[slot]) + 1), self._result(slot, info)))
            self.writers[slot] = None
        self.recording[ended] = False
        return paths

    def _result(self, slot: int, info: dict) -> dict:
        stats = {
            name: [float(v) for v in np.asarray(info[name])[slot]]
            for name in ("kills", "deaths", "towers_destroyed", "barracks_destroyed", "last_hits", "denies")
            if name in info
        }
        return {
            "winner": int(np.asarray(info["winner"])[slot]),
            "steps": int(self.steps[slot]),
            "seconds": float(np.asarray(info["game_time"])[slot]),
            "team_stats": stats,
        }


class TrainingReplays:
    """``train.replay_every``: a rollout worker keeps one game in ``every`` of those it starts in ``directory``,
    and the oldest replays go once they pass ``keep_bytes`` (0: keep all), like saved rollouts.

    The worker calls :meth:`games_started` after each env step (for the games that begin in the slots that just
    finished), :meth:`label` once the opponents of those games are drawn, and :meth:`step` after each env step.
    Only the learner's heroes carry predictions; past versions and bots are NaN.
    """

    def __init__(self, env, directory: Path, *, every: int, keep_bytes: int, run_name: str, tag: str):
        self.recorder = GameRecorder(env, directory)
        self.directory, self.every, self.keep_bytes = Path(directory), int(every), int(keep_bytes)
        self.run_name, self.tag = run_name, tag
        self.started = 0
        self.unlabelled = np.zeros(env.num_games, dtype=bool)

    @classmethod
    def for_worker(cls, recipe, env, run_dir: Path | None, seed: int) -> TrainingReplays | None:
        """The replays of a rollout worker of a run (None without ``train.replay_every`` or a run directory)."""
        every = recipe.train.replay_every
        if not every or run_dir is None:
            return None
        from fivectl.store.rundir import RunDir

        run = RunDir.open(run_dir)
        keep = int(recipe.train.replay_keep_gb * 1e9)
        return cls(
            env,
            run.replays_path,
            every=every,
            keep_bytes=keep,
            run_name=run.path.name,
            tag=f"w{seed & 0xFFFFFF:06x}",
        )

    @property
    def active(self) -> bool:
        return bool(self.recorder.recording.any())

    def games_started(self, done: np.ndarray, version: int) -> None:
        slots = np.flatnonzero(done)
        numbers = self.started + 1 + np.arange(len(slots))
        self.started += len(slots)
        chosen = numbers % self.every == 0
        if chosen.any():
            names = [f"v{version:08d}-{self.tag}-g{n:07d}" for n in numbers[chosen]]
            self.recorder.start(slots[chosen], names, [{} for _ in names])
            self.unlabelled[slots[chosen]] = True

    def label(self, opponent: np.ndarray, learner_side: np.ndarray, version: int, latest: int) -> None:
        """Name the agents of recorded games that just got their opponents (``OpponentSet`` codes: ``latest``
        the learner on both sides, >= 0 a past version, below ``latest`` a bot)."""
        from fivectl.runtime.opponents import bot_level

        for slot in np.flatnonzero(self.unlabelled & self.recorder.recording).tolist():
            code = int(opponent[slot])
            learner = (f"{self.run_name}@{version}", version)
            if code == latest:
                other = learner
            elif code >= 0:
                other = (f"{self.run_name}@{code}", code)
            else:
                other = (f"bot:{bot_level(code)}", None)
            by_team = [learner, other] if int(learner_side[slot]) == 0 else [other, learner]
            self.recorder.annotate(
                slot, {"agents": [a for a, _ in by_team], "agent_versions": [v for _, v in by_team]}
            )
        self.unlabelled[:] = False

    def predictions(self, out, trained: np.ndarray, objective_names: Sequence[str]) -> dict[str, np.ndarray]:
        """The learner's predictions of one forward pass (``PolicyNet.act`` output over [G * 2k] agents, with
        ``aux`` when objectives are predicted) for its heroes ``trained`` (bool [G * 2k]); NaN elsewhere."""
        games, heroes = self.recorder.env.num_games, self.recorder.env.agents_per_game
        pred = empty_predictions(games, heroes)
        pred["value"][:] = np.where(trained, out.value.numpy(), np.nan).reshape(games, heroes)
        pred["win_prob"][:] = np.where(trained, out.win_prob.numpy(), np.nan).reshape(games, heroes)
        if out.aux is not None and "objectives" in out.aux:
            made = np.where(trained[:, None], out.aux["objectives"].numpy(), np.nan)
            pred["objectives"][..., objective_columns(objective_names)] = made.reshape(games, heroes, -1)
        return pred

    def step(
        self, actions: np.ndarray, done: np.ndarray, info: dict, predictions: dict[str, np.ndarray] | None
    ) -> None:
        if self.recorder.step(actions, done, info, predictions) and self.keep_bytes:
            from fivectl.store.rollouts import prune_rollouts  # the same whole-file, oldest-first pruning

            prune_rollouts(self.directory, self.keep_bytes)

    def close(self) -> None:
        self.recorder.close()


__all__ = [
    "CHUNK_STEPS",
    "GameRecorder",
    "TrainingReplays",
    "capture_frame",
    "empty_predictions",
    "game_header",
    "objective_columns",
]
