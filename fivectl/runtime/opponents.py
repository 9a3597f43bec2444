"""Opponents inside a rollout worker: the latest parameters, past versions (paper appendix N), scripted bots.

Each game has an opponent code: -1 (``LATEST``) for the latest parameters (both teams are the learner and both
train); a past version >= 0 that plays one side (chosen at random per game) while the learner plays the other; or,
when the recipe asks for a curriculum (``selfplay.bot_fraction``), a scripted bot, coded ``bot_code(level)`` < -1.
Opponents are drawn only when a game starts; past versions come from the pool published with the parameters and
their networks are loaded from the run's checkpoints (a few kept in memory).
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch

from fivectl.config import Recipe
from fivectl.model import PolicyNet
from fivectl.model.traced import TracedActor
from fivectl.runtime.acting import act_on_rows
from fivectl.schema import ObsSchema
from fivectl.selfplay.pool import LATEST
from fivectl.sim import BOT_LEVELS, BotMemory, bot_actions
from fivectl.store.checkpoint import CheckpointStore


def bot_code(level: str) -> int:
    """Opponent code of a scripted bot level: -2, -3, ... (below ``LATEST``)."""
    return -2 - BOT_LEVELS.index(level)


def bot_level(code: int) -> str:
    return BOT_LEVELS[-2 - code]


class OpponentSet:
    """Who plays each game's opponent side, and the cached networks of past versions."""

    def __init__(
        self,
        recipe: Recipe,
        schema: ObsSchema,
        run_dir: Path | None,
        games: int,
        rng: np.random.Generator,
        *,
        cache_size: int = 4,
    ):
        self.recipe = recipe
        self.schema = schema
        self.store = CheckpointStore(Path(run_dir) / "checkpoints.zarr") if run_dir is not None else None
        self.rng = rng
        self.games = games
        self.team_size = recipe.game.team_size
        self.cache_size = cache_size
        self.opponent = np.full(games, LATEST, dtype=np.int32)
        self.round_left = 0  # game starts left in the current round (start_round)
        self.round_latest = True
        self.round_versions: np.ndarray | None = None
        self.learner_side = np.zeros(games, dtype=np.int8)
        # each past version's network, with its traced act; an evicted one is kept (``spare``) to load the next
        # version into, in place, so that its graphs (recorded on its tensors) serve every version it plays
        self.nets: OrderedDict[int, TracedActor] = OrderedDict()
        self.spare: list[TracedActor] = []
        self.missing = 0
        self.bot_fraction = recipe.selfplay.bot_fraction.start  # the trainer publishes its schedule's value
        self.bot_codes = np.array([bot_code(b.removeprefix("bot:")) for b in recipe.selfplay.bots], np.int32)
        self.bot_memory = {int(c): BotMemory.empty(games, self.team_size) for c in self.bot_codes}
        agents = games * 2 * self.team_size
        lstm = recipe.model.lstm_size
        self.state = (torch.zeros(1, agents, lstm), torch.zeros(1, agents, lstm))

    def assign(self, games: np.ndarray, pool: tuple[np.ndarray, np.ndarray]) -> None:
        """Draw opponents for ``games`` (bool [G]) that are starting: a bot with ``bot_fraction``; of the rest,
        the latest with ``latest_fraction``, else a past version with probability p_i (paper N: p ∝ exp(q))."""
        idx = np.flatnonzero(games)
        if idx.size == 0:
            return
        versions, probs = pool
        selfplay = self.recipe.selfplay
        if self.round_left <= 0:
            self.start_round(versions, probs)
        self.round_left -= idx.size
        if selfplay.past_games_together:
            latest = np.full(idx.size, self.round_latest)
        else:
            latest = self.rng.random(idx.size) < selfplay.latest_fraction
        if versions.size == 0:
            latest[:] = True
        picks = self.draw_past(idx.size, versions, probs) if versions.size else np.zeros(idx.size)
        opponent = np.where(latest, LATEST, picks).astype(np.int32)
        if self.bot_codes.size:
            bot = self.rng.random(idx.size) < self.bot_fraction
            opponent[bot] = self.rng.choice(self.bot_codes, size=int(bot.sum()))
        self.opponent[idx] = opponent
        self.learner_side[idx] = self.rng.integers(0, 2, size=idx.size).astype(np.int8)
        for memory in self.bot_memory.values():
            memory.forget(games)

    def start_round(self, versions: np.ndarray, probs: np.ndarray) -> None:
        """A round is the next ``games`` game starts: every game of the worker once, whether they start together
        or spread over a game length (``train.game_phases``). Its games share the past versions drawn here and,
        with ``selfplay.past_games_together``, the choice between the latest and a past version."""
        self.round_left = self.games
        self.round_latest = bool(self.rng.random() < self.recipe.selfplay.latest_fraction)
        distinct = self.recipe.selfplay.past_versions_per_batch
        self.round_versions = None
        if distinct and versions.size:
            self.round_versions = self.rng.choice(versions, size=distinct, p=probs)

    def draw_past(self, n: int, versions: np.ndarray, probs: np.ndarray) -> np.ndarray:
        """``n`` past versions, each distributed as ``probs``: one of the round's ``past_versions_per_batch``
        versions (each drawn from p) uniformly, or with 0 an independent draw per game. The marginal of every
        game is still p, and the worker runs one network per distinct version instead of one per game."""
        if self.round_versions is None:
            return self.rng.choice(versions, size=n, p=probs)
        return self.round_versions[self.rng.integers(0, len(self.round_versions), size=n)]

    def train_mask(self) -> np.ndarray:
        """bool [G*2k]: agents whose samples the learner trains on (both teams against latest, else its side)."""
        k = self.team_size
        team = np.repeat(np.arange(2), k)[None, :]  # [1, 2k]
        mine = (self.opponent[:, None] == LATEST) | (team == self.learner_side[:, None])
        return mine.reshape(-1)

    def opponent_rows(self) -> dict[int, np.ndarray]:
        """Past version -> the agent rows it plays."""
        mask = ~self.train_mask()
        rows_version = np.repeat(self.opponent, 2 * self.team_size)
        return {
            int(v): np.flatnonzero(mask & (rows_version == v))
            for v in np.unique(self.opponent[self.opponent >= 0])
        }

    def drop_missing(self) -> None:
        """Games whose past version cannot be loaded (a pruned checkpoint) go on against the latest: called
        before the latest acts, so that it acts for them in this very step."""
        for version in np.unique(self.opponent[self.opponent >= 0]):
            if self.net(int(version)) is None:
                self.opponent[self.opponent == version] = LATEST

    def net(self, version: int) -> PolicyNet | None:
        actor = self.actor(version)
        return actor.net if actor is not None else None

    def actor(self, version: int) -> TracedActor | None:
        """The traced act of ``version``'s network, loaded from the run's checkpoints unless cached."""
        if version in self.nets:
            self.nets.move_to_end(version)
            return self.nets[version]
        if self.store is None:
            return None
        try:
            ckpt = self.store.load(version, sections=("model",))
        except Exception:  # noqa: BLE001 - a pruned or unreadable version: play the latest instead
            self.missing += 1
            return None
        actor = self.spare.pop() if self.spare else self.new_actor()
        keys = ckpt.attrs["model_keys"]
        actor.net.load_state_dict({k: torch.from_numpy(np.array(ckpt.arrays["model"][k])) for k in keys})
        self.nets[version] = actor
        self.evict_unused()
        return actor

    def new_actor(self) -> TracedActor:
        net = PolicyNet(self.schema, self.recipe.model, self.team_size, obs_clip=self.recipe.train.obs_clip)
        return TracedActor(net.eval())

    def evict_unused(self) -> None:
        """Keep at most ``cache_size`` networks, but never one a running game still plays: reloading a
        checkpoint every step would stall the worker."""
        in_use = set(int(v) for v in self.opponent[self.opponent >= 0])
        for version in list(self.nets):
            if len(self.nets) <= self.cache_size:
                break
            if version not in in_use:
                self.spare.append(self.nets.pop(version))

    def act_bots(self, env, obs: dict[str, np.ndarray], actions: torch.Tensor) -> None:
        """Overwrite ``actions`` ([G*2k, 4]) of the heroes that scripted bots play; ``obs`` is ``[G, 2k, ...]``."""
        k = self.team_size
        for code, memory in self.bot_memory.items():
            played = self.opponent == code
            games = np.flatnonzero(played)
            if games.size == 0:
                continue
            side = (1 - self.learner_side).astype(np.int64)
            chosen = bot_actions(env, obs, side, bot_level(code), memory, self.rng, games=played)  # [G, k, 4]
            rows = (games[:, None] * 2 * k + side[games, None] * k + np.arange(k)[None, :]).reshape(-1)
            actions[torch.from_numpy(rows)] = torch.from_numpy(chosen[games].reshape(-1, 4)).to(actions.dtype)

    @torch.no_grad()
    def act(self, obs: dict[str, torch.Tensor], first: torch.Tensor, actions: torch.Tensor) -> None:
        """Overwrite ``actions`` for the rows that past versions play, with those versions' choices: each
        through its network's traced graphs, as the latest acts (half the time of eager ``act`` at 45 rows)."""
        for version, rows in self.opponent_rows().items():
            if rows.size == 0:
                continue
            actor = self.actor(version)
            if actor is None:
                self.opponent[self.opponent == version] = LATEST  # its games go on against the latest
                continue
            out = act_on_rows(
                actor, obs, self.state, first, rows=rows, team_size=self.team_size, with_aux=False
            )
            index = torch.from_numpy(rows)
            actions[index] = out.actions[index]
            self.state = out.state
