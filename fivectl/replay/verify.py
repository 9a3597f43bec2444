"""``replay verify``: re-simulate a recorded game from its random start state and its recorded actions.

The embedded game is deterministic given its random state and the actions (``sim/core.py``), so playing the
recorded actions from the recorded start state must reproduce every recorded frame exactly, the final one included.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from fivectl.config import GameConfig
from fivectl.errors import BadInput
from fivectl.runtime.recorder import capture_frame
from fivectl.schema import load_schema
from fivectl.schema.spec import ObsSchema
from fivectl.store.replay import STATE_COLUMNS, Replay


@dataclass
class VerifyResult:
    ok: bool
    steps_checked: int
    message: str


def replay_game_config(replay: Replay) -> GameConfig:
    try:
        return GameConfig(**replay.header["game"])
    except (TypeError, KeyError) as e:
        raise BadInput(f"{replay.path}: the replay's game section does not fit this fivectl ({e})") from None


def replay_schema(replay: Replay) -> ObsSchema:
    """The schema the game was recorded with: the header's own (a run operated by surgery reads a changed one),
    else the numbered schema of older replays."""
    if "schema" in replay.header:
        try:
            return ObsSchema.from_json(json.dumps(replay.header["schema"]))
        except (KeyError, TypeError, ValueError) as e:
            raise BadInput(f"{replay.path}: the replay's schema does not fit this fivectl ({e})") from None
    return load_schema(int(replay.header["schema_version"]))


def verify_replay(replay: Replay) -> VerifyResult:
    """Re-simulate ``replay`` and compare every state column of every row."""
    from fivectl.sim import MobaEnv, hero_id  # the compiled game is loaded only to verify

    header = replay.header
    env = MobaEnv(replay_game_config(replay), 1, int(header["env_seed"]), replay_schema(replay))
    if header.get("change"):
        # the same change in the same fraction re-draws the recorded variant from the game's start_rng
        env.set_change(header["change"], float(header["change_fraction"]))
    # the recorded heroes: a game with a chosen lineup (evaluate match --lineup) did not draw them; for a game
    # that did, choosing the same ones changes nothing (the draw still consumes the same random numbers)
    heroes = np.array([hero_id(name) for name in header["lineup"]], dtype=np.int32)
    env.set_lineups(heroes.reshape(1, 2, env.team_size))
    env.reset(start_rng=np.array([int(header["start_rng"])], dtype=np.uint64))
    game = np.zeros(1, dtype=np.int64)
    mismatch = _compare(replay, 0, capture_frame(env.core_state, env.state, game, env.layout.n_units))
    if mismatch:
        return VerifyResult(False, 0, mismatch)
    actions = replay.arrays["action"]
    for t in range(replay.steps):
        _, _, done, _ = env.step(actions[t][None])
        ended = bool(done[0])
        if ended != (t == replay.steps - 1):
            when = "ended" if ended else "did not end"
            return VerifyResult(
                False, t + 1, f"the re-simulated game {when} at step {t + 1} of {replay.steps}"
            )
        core, views = (env.final_core, env.final) if ended else (env.core_state, env.state)
        mismatch = _compare(replay, t + 1, capture_frame(core, views, game, env.layout.n_units))
        if mismatch:
            return VerifyResult(False, t + 1, mismatch)
    return VerifyResult(True, replay.steps, f"all {replay.steps + 1} frames match the re-simulated game")


def _compare(replay: Replay, row: int, frame: dict[str, np.ndarray]) -> str:
    """'' when the recorded row equals the re-simulated frame, else where they first differ."""
    for name in STATE_COLUMNS:
        recorded, simulated = replay.arrays[name][row], frame[name][0]
        if not np.array_equal(recorded, simulated):
            where = np.flatnonzero(np.asarray(recorded != simulated).reshape(-1))
            index = int(where[0]) if len(where) else 0
            return (
                f"step {row}: column {name!r} differs at index {index} "
                f"(recorded {np.asarray(recorded).reshape(-1)[index]}, re-simulated "
                f"{np.asarray(simulated).reshape(-1)[index]})"
            )
    return ""
