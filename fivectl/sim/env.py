"""``MobaEnv``: the batched API of the embedded MOBA (docs/ARCHITECTURE.md "Game").

```python
env = MobaEnv(game_cfg, num_games, seed, schema)
obs = env.reset()                          # key -> [G, A, *shape] (schema.array_specs())
obs, rewards, done, info = env.step(actions)   # actions int32 [G, A, 4]: primary, delay, target slot, offset
```

A primary of ``HOLD`` (-1) is no decision: the hero keeps its current order (agents that decide every few steps).

Agents are ordered team 0 then team 1 (``agents_per_game = 2 * team_size``). With a schema whose ``frame`` is
``team``, team 1's observations and action offsets are in the reflected map (``schema/frame.py``). A finished game is reset
automatically: ``done[g]`` is True, ``obs`` holds the first observation of the next game, and ``info`` holds the
figures of the game that just ended (``winner``, ``game_time``, per-team stats). See ``state.py`` for the state
arrays (``env.state``) that scripted bots read.

The state of a game's final frame stays readable after the reset: ``env.final`` has the same named views as
``env.state``, and row ``g`` holds the last frame of the game that ended in slot ``g`` (replays record it).
``env.start_rng[g]`` is the random state the game now in slot ``g`` started from: with the game config, the
environment change and fraction set then (``set_change``) and its actions it re-creates the game exactly
(``env.reset(start_rng=...)``).

Environment changes (``changes.py``, ``fivectl anneal``): ``env.set_change(name, fraction)`` makes each game that
starts from then on run the change with probability ``fraction``; ``env.variant[g]`` says whether the game now in
slot g runs it, and ``info["variant"]`` of a step whether each stepped game did (the finished one where ``done``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fivectl.config.game import GameConfig
from fivectl.errors import BadInput
from fivectl.schema.frame import TeamFrame
from fivectl.schema.spec import ObsSchema
from fivectl.sim import core as C
from fivectl.sim import data as D
from fivectl.sim.components import REWARD_COMPONENTS
from fivectl.sim.observe import KM, Encoder
from fivectl.sim.state import (
    CK_FRACTION,
    GI_VARIANT,
    Params,
    alloc_state,
    build_layout,
    no_change,
    state_views,
)

# Schema primary-action names -> (internal action kind, ability/item slot). A new action in a schema version is
# added here (and executed in core.execute_action).
PRIMARY_ACTIONS = {
    "noop": (C.ACT_NOOP, 0),
    "move": (C.ACT_MOVE, 0),
    "attack": (C.ACT_ATTACK, 0),
    "ability1": (C.ACT_ABILITY, 0),
    "ability2": (C.ACT_ABILITY, 1),
    "ability3": (C.ACT_ABILITY, 2),
    "ability4": (C.ACT_ABILITY, 3),
    "item1": (C.ACT_ITEM, 0),
    "item2": (C.ACT_ITEM, 1),
    "item3": (C.ACT_ITEM, 2),
    "item4": (C.ACT_ITEM, D.NEW_ITEM_SLOT),  # the change item (changes.py "storm-maul"; surgery add-action)
    "buyback": (C.ACT_BUYBACK, 0),
}
STAT_NAMES = C.STAT_NAMES
# ``actions[..., 0] = HOLD``: the hero makes no decision this step (keeps its order and its previous action).
HOLD = C.ACT_HOLD
assert len(REWARD_COMPONENTS) == C.N_COMPONENTS


def resolve_pool(cfg: GameConfig) -> np.ndarray:
    """Hero indices of the configured pool; unknown names and too-small pools are BadInput."""
    if cfg.hero_pool:
        by_name = {n.lower(): i for i, n in enumerate(D.HERO_NAMES)}
        unknown = [n for n in cfg.hero_pool if n.lower() not in by_name]
        if unknown:
            raise BadInput(
                f"game.hero_pool: unknown hero(es) {', '.join(unknown)} (known: {', '.join(D.HERO_NAMES)})"
            )
        pool = sorted({by_name[n.lower()] for n in cfg.hero_pool})
    else:
        pool = list(range(D.N_HEROES))
    if 2 * cfg.team_size > len(pool):
        raise BadInput(
            f"game.team_size: {cfg.team_size} per team needs {2 * cfg.team_size} heroes, the pool has {len(pool)}"
        )
    return np.array(pool, dtype=np.int32)


def game_seeds(seed: int, num_games: int, first: int = 0) -> np.ndarray:
    """Per-game xorshift states from splitmix64(seed, game index): game g's stream ignores the batch size."""
    out = np.empty(num_games, dtype=np.uint64)
    mask = (1 << 64) - 1
    for i in range(num_games):
        z = (seed * 0x9E3779B97F4A7C15 + (first + i + 1) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out[i] = z or 0x2545F4914F6CDD1D
    return out


class MobaEnv:
    """A batch of independent games of the embedded MOBA, stepped together by numba kernels."""

    def __init__(self, game_cfg: GameConfig, num_games: int, seed: int, schema: ObsSchema):
        if num_games < 1:
            raise BadInput(f"num_games must be >= 1, got {num_games}")
        if game_cfg.lanes not in D.LANE_ORDER:
            raise BadInput(f"game.lanes: must be 1 or 3, got {game_cfg.lanes}")
        if not 1 <= game_cfg.team_size <= 5:
            raise BadInput(f"game.team_size: must be 1..5, got {game_cfg.team_size}")
        if game_cfg.fps < 1 or game_cfg.frameskip < 1 or game_cfg.time_limit_s <= 0:
            raise BadInput("game: fps, frameskip and time_limit_s must be positive")
        unknown = [p for p in schema.action.primary if p not in PRIMARY_ACTIONS]
        if unknown:
            raise BadInput(f"schema v{schema.version}: unknown primary action(s) {', '.join(unknown)}")
        self.cfg = game_cfg
        self.schema = schema
        self.num_games = int(num_games)
        self.team_size = int(game_cfg.team_size)
        self.agents_per_game = 2 * self.team_size
        hero_group = next((g for g in schema.target_groups if g.name == "heroes"), None)
        if hero_group is not None and hero_group.count < self.agents_per_game:
            raise BadInput(
                f"schema v{schema.version}: the heroes set holds {hero_group.count} units, "
                f"a {self.team_size}v{self.team_size} game has {self.agents_per_game}"
            )
        self.seed = int(seed)
        self.layout = build_layout(self.team_size, game_cfg.lanes)
        self.params = Params(
            fps=int(game_cfg.fps),
            frameskip=int(game_cfg.frameskip),
            time_limit_ticks=int(round(game_cfg.time_limit_s * game_cfg.fps)),
            tiebreak=game_cfg.time_limit_result == "tiebreak",
            fog=bool(game_cfg.fog_of_war),
            rand_init=bool(game_cfg.randomize_initial_state),
            rand_lanes=bool(game_cfg.randomize_lanes),
            rand_boss=bool(game_cfg.randomize_boss_health),
            rand_lineup=bool(game_cfg.randomize_lineup),
            rand_items=bool(game_cfg.randomize_items),
            pool=resolve_pool(game_cfg),
            lineup=np.full((self.num_games, self.agents_per_game), -1, np.int32),
            change=no_change(),
        )
        self.change: str | None = None  # the environment change new games draw (set_change)
        self.act_kind = np.array([PRIMARY_ACTIONS[p][0] for p in schema.action.primary], dtype=np.int64)
        self.act_slot = np.array([PRIMARY_ACTIONS[p][1] for p in schema.action.primary], dtype=np.int64)
        self.encoder = Encoder(schema, self.act_kind, self.act_slot)
        # schema.frame == "team": team 1 observes and aims in the reflected map (schema/frame.py)
        self.frame = TeamFrame(schema, self.team_size, D.MAP_SIZE * KM) if schema.frame == "team" else None
        self.core_state = alloc_state(self.num_games, self.layout, self.agents_per_game, schema.n_targets)
        self.state = state_views(self.core_state)  # named views for scripted bots (see state.py)
        # the final frame of the last game that ended in each slot, kept before the slot is reset (replays)
        self.final_core = alloc_state(self.num_games, self.layout, self.agents_per_game, schema.n_targets)
        self.final = state_views(self.final_core)
        self.start_rng = np.zeros(self.num_games, dtype=np.uint64)
        self.n_components = len(REWARD_COMPONENTS)
        self._obs: dict[str, np.ndarray] | None = None

    # ------------------------------------------------------------------ API
    def reset(self, start_rng: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Start every game; ``start_rng`` [G] (uint64) replays the games that began from those random states
        (``env.start_rng`` of a recorded game) instead of the seed's."""
        if start_rng is None:
            self.core_state.rng[:] = game_seeds(self.seed, self.num_games)
        else:
            self.core_state.rng[:] = np.asarray(start_rng, dtype=np.uint64).reshape(self.num_games)
        self.start_rng[:] = self.core_state.rng
        C.reset_all(self.core_state, self.layout, self.params)
        self._obs = self._encode()
        return self._obs

    def set_change(self, name: str | None, fraction: float) -> None:
        """From now on every game that starts (``reset``, ``restart``, the automatic reset after a game ends)
        runs the environment change ``name`` (``changes.CHANGES``) with probability ``fraction``, drawn from that
        game's own random stream (deterministic per seed, independent of the batch size); games in progress keep
        their variant. ``None`` or a fraction of 0: the unchanged game, exactly. A change the schema cannot
        express (its action or hero vocabulary missing) is BadInput naming the surgery it needs."""
        from fivectl.sim.changes import get_change, missing_surgery

        fraction = float(fraction)
        if not 0.0 <= fraction <= 1.0:
            raise BadInput(f"change fraction must be in [0, 1], got {fraction:g}")
        if name is None:
            self.params.change[:] = no_change()
            self.change = None
            return
        change = get_change(name)
        needed = missing_surgery(change, self.schema)
        if needed is not None:
            raise BadInput(f"change {name}: schema v{self.schema.version} lacks what it needs; first run: {needed}")
        self.params.change[:] = change.params_change(fraction)
        self.change = name

    @property
    def change_fraction(self) -> float:
        return float(self.params.change[CK_FRACTION])

    @property
    def variant(self) -> np.ndarray:
        """bool [G]: whether the game now in slot g runs the change (``set_change``)."""
        return self.core_state.gi[:, GI_VARIANT].astype(np.bool_)

    def step(self, actions: np.ndarray, masks_only: bool = False):
        """Play ``actions`` [G, A, 4] for one step; returns (obs, reward components, done, info). With
        ``masks_only`` the observation holds the action masks alone (``observe.MASK_KEYS``), and the game is the same:
        for a step whose observation no policy reads, only scripted bots and the next step's validation."""
        if self._obs is None:
            raise BadInput("MobaEnv.step() called before reset()")
        G, A = self.num_games, self.agents_per_game
        actions = np.asarray(actions)
        if actions.shape != (G, A, 4):
            raise BadInput(f"actions: expected shape {(G, A, 4)}, got {actions.shape}")
        if self.frame is not None:
            actions = self.frame.actions_to_world(actions)
        actions = np.ascontiguousarray(actions, dtype=np.int64)
        rew = np.zeros((G, A, self.n_components), np.float64)
        invalid = np.zeros((G, A), np.int64)
        done = np.zeros(G, np.bool_)
        winner = np.full(G, -1, np.int8)
        game_time = np.zeros(G, np.float64)
        stats = np.zeros((G, len(STAT_NAMES), 2), np.float64)
        C.step_all(
            self.core_state,
            self.layout,
            self.params,
            actions,
            self.act_kind,
            self.act_slot,
            self._obs["action_mask"],
            self._obs["target_mask"],
            rew,
            invalid,
            done,
            winner,
            game_time,
            stats,
        )
        variant = self.variant  # of the games just stepped, the finished ones included (read before their reset)
        if done.any():
            self._keep_final_and_reset(done)
        self._obs = self._encode(masks_only)
        info = {
            "winner": winner,
            "game_time": game_time.astype(np.float32),
            "invalid_actions": invalid,
            "variant": variant,
        }
        for i, name in enumerate(STAT_NAMES):
            info[name] = stats[:, i, :].copy()
        return self._obs, rew.astype(np.float32), done, info

    def restart(self, games: np.ndarray) -> dict[str, np.ndarray]:
        """Abandon the games where ``games`` (bool [G]) is True and start new ones there (no result is reported
        for the abandoned games); returns the observation of every game."""
        if self._obs is None:
            raise BadInput("MobaEnv.restart() called before reset()")
        games = np.asarray(games, dtype=np.bool_)
        if games.shape != (self.num_games,):
            raise BadInput(f"games: expected shape {(self.num_games,)}, got {games.shape}")
        self.start_rng[games] = self.core_state.rng[games]
        C.reset_games(self.core_state, self.layout, self.params, games)
        self._obs = self._encode()
        return self._obs

    def set_lineups(self, lineups: np.ndarray | None, games: np.ndarray | None = None) -> None:
        """Choose the heroes of the next game in some slots: ``lineups`` int [n, 2, team_size] hero ids (team 0,
        team 1; a row of -1 = drawn from the pool again), ``games`` the n slots (bool [G] or indices; default all).
        A chosen lineup stays with its slot for every game started there (``reset``, ``restart`` or the automatic
        reset after a game ends) until it is changed; ``None`` returns the slots to random lineups."""
        from fivectl.sim.lineup import check_lineup

        rows = np.arange(self.num_games) if games is None else np.arange(self.num_games)[games]
        if lineups is None:
            self.params.lineup[rows] = -1
            return
        lineups = np.asarray(lineups, dtype=np.int32).reshape(len(rows), 2, self.team_size)
        for lineup in lineups:
            if (lineup >= 0).any():
                check_lineup(lineup, self.team_size, self.params.pool)
        self.params.lineup[rows] = lineups.reshape(len(rows), self.agents_per_game)

    def observe(self) -> dict[str, np.ndarray]:
        """Re-encode the current state (after editing ``env.state`` in a test or a scenario) and return it;
        the next ``step`` validates actions against this observation."""
        if self._obs is None:
            raise BadInput("MobaEnv.observe() called before reset()")
        C.refresh_vision_all(self.core_state, self.layout, self.params)
        self._obs = self._encode()
        return self._obs

    def valid_actions(self, obs: dict[str, np.ndarray] | None = None):
        """(action_mask [G, A, P], target_mask [G, A, P, T], param_mask [G, A, P, 2]) of the current (or given)
        observation: what a uniformly random agent samples from (see ``sample_random_actions``)."""
        o = obs if obs is not None else self._obs
        return o["action_mask"], o["target_mask"], o["param_mask"]

    def sample_random_actions(self, rng: np.random.Generator, obs: dict[str, np.ndarray] | None = None):
        """Uniform over valid primaries, then uniform over valid targets / offsets / delays."""
        am, tm, pm = self.valid_actions(obs)
        return sample_valid_actions(rng, am, tm, pm, self.schema.action.delays, self.schema.action.n_offset)

    # ------------------------------------------------------------------ internals
    def _keep_final_and_reset(self, done: np.ndarray) -> None:
        """Copy the final frame of the games that just ended into ``final``, then start their next games."""
        S, F = self.core_state, self.final_core
        for name in ("uf", "ui", "hf", "hi", "gf", "gi"):
            getattr(F, name)[done] = getattr(S, name)[done]
        self.start_rng[done] = S.rng[done]
        C.reset_games(S, self.layout, self.params, done)

    def _encode(self, masks_only: bool = False) -> dict[str, np.ndarray]:
        obs = self.encoder.encode(self.core_state, self.layout, self.params, masks_only)
        return obs if self.frame is None or masks_only else self.frame.observe(obs)  # masks need no reflection


def sample_valid_actions(rng, action_mask, target_mask, param_mask, delays=4, n_offset=81) -> np.ndarray:
    """Uniform sampling of valid actions for arrays [..., P], [..., P, T], [..., P, 2]: a valid primary (noop if
    none), a valid target slot of it (0 if none), a delay and an offset, all uniform. ``param_mask`` is not needed
    to sample (unused parameters are ignored by the game); it is taken for the signature's symmetry."""
    lead = action_mask.shape[:-1]
    am = np.ascontiguousarray(action_mask).reshape(-1, action_mask.shape[-1])
    tm = np.ascontiguousarray(target_mask).reshape(am.shape[0], target_mask.shape[-2], target_mask.shape[-1])
    out = np.empty((am.shape[0], 4), np.int32)
    sample_kernel(rng, am, tm, delays, n_offset, out)
    return out.reshape(*lead, 4)


@njit(cache=True)
def uniform_int(rng, n):
    """Uniform integer in [0, n) (the min guards against rounding of random() * n up to n)."""
    return min(int(rng.random() * n), n - 1)


@njit(cache=True)
def uniform_choice(rng, mask):
    """Index of a uniformly drawn True entry of ``mask`` (0 if there is none)."""
    n = 0
    for i in range(mask.shape[0]):
        n += mask[i]
    if n == 0:
        return 0
    j = uniform_int(rng, n)
    for i in range(mask.shape[0]):
        if mask[i]:
            if j == 0:
                return i
            j -= 1
    return 0


@njit(cache=True)
def sample_kernel(rng, am, tm, delays, n_offset, out):
    for i in range(am.shape[0]):
        primary = uniform_choice(rng, am[i])
        out[i, 0] = primary
        out[i, 1] = uniform_int(rng, delays)
        out[i, 2] = uniform_choice(rng, tm[i, primary]) if tm.shape[2] else 0
        out[i, 3] = uniform_int(rng, n_offset)
