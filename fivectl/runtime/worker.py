"""Rollout workers: run a batch of games with the latest published policy and fill fragments.

The same ``RolloutWorker`` runs inside a worker process (``worker_main``) or, in serial mode, inside the learner's
process. A worker picks up new parameters only between fragments, and an opponent only between games
(paper N: never swap an opponent in the middle of a game).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from fivectl.config import Recipe
from fivectl.model import PolicyNet
from fivectl.model.policy import ActOutput
from fivectl.model.traced import TracedActor
from fivectl.rl.reward import shape_rewards
from fivectl.runtime.acting import act_on_rows
from fivectl.runtime.allocator import keep_freed_memory
from fivectl.runtime.buffers import ArraySpec, SharedBlock
from fivectl.runtime.inference import InferenceClient
from fivectl.runtime.opponents import OpponentSet
from fivectl.runtime.params import SCALAR_KEYS, ParameterStore
from fivectl.runtime.recorder import TrainingReplays
from fivectl.runtime.stagger import stagger_game_starts
from fivectl.schema import ObsSchema
from fivectl.selfplay.pool import LATEST
from fivectl.sim import HOLD, MobaEnv, ObjectiveTracker, hero_networth

# Per-worker control columns in shared memory.
CTRL_HEARTBEAT, CTRL_VERSION, CTRL_SIM_S, CTRL_INFER_S, CTRL_WAIT_S, CTRL_STEPS, CTRL_READY = range(7)
N_CTRL = 7
SLOT_FREE, SLOT_FILLING, SLOT_FULL = 0, 1, 2
NO_ANSWER = 2**62  # RolloutWorker.oldest_acted before the inference server's first answer of a fragment


def control_specs(n_workers: int, n_slots: int) -> list[ArraySpec]:
    return [
        ArraySpec("workers", (max(n_workers, 1), N_CTRL), "float64"),
        ArraySpec("slot_state", (n_slots,), "int32"),
        # stop[0] = 1 asks every worker to finish. A flag in shared memory, not an mp.Event: an Event holds a
        # lock across processes, and a worker killed while holding it would hang the learner's set().
        ArraySpec("stop", (1,), "int32"),
    ]


def warm_up_game(recipe: Recipe, schema: ObsSchema) -> None:
    """Compile (or load from numba's cache) the game's kernels once, before workers start, so that they load
    the cache instead of compiling the same code side by side."""
    env = MobaEnv(recipe.game, 1, 0, schema)
    obs = env.reset()
    actions = np.zeros((1, env.agents_per_game, 4), dtype=np.int32)
    env.step(actions)
    del obs


def recipe_anneals(recipe: Recipe) -> bool:
    return bool(recipe.anneal.change)


def game_change(recipe: Recipe, params: ParameterStore) -> tuple[str | None, float]:
    """The change a worker's games run and in which fraction of them: the one being annealed in at the
    published fraction, else a kept one in every game, else none."""
    if recipe_anneals(recipe):
        scalars = params.views["__scalars"]
        return recipe.anneal.change, float(scalars[SCALAR_KEYS.index("change_fraction")])
    if recipe.anneal.kept:
        return recipe.anneal.kept[-1], 1.0
    return None, 0.0


def worker_seed(base_seed: int, worker_id: int, generation: int, version: int) -> int:
    """Distinct, reproducible game seeds per worker, per replacement and per resume point."""
    return int(np.random.SeedSequence([base_seed, worker_id, generation, version]).generate_state(1)[0])


@dataclass
class DecisionStep:
    """What the game returned over one decision (``model.decide_every`` env steps), summed or taken at the end.

    A game that ends before the last env step of a decision is reset by the env and plays on with held orders;
    what its next game earns in those steps is left out (it belongs to no sample: the next sample starts there).
    """

    obs: dict[str, np.ndarray]
    rewards: np.ndarray  # [G, 2k] shaped rewards
    components: np.ndarray  # [G, 2k, C] raw reward components
    done: np.ndarray  # [G] a game ended during the decision
    winner: np.ndarray  # [G] int8, -1 unless it ended with a winner
    game_seconds: np.ndarray  # [G] the ended game's length
    invalid: np.ndarray  # [G, 2k]
    events: np.ndarray | None  # [G, 2k, n_objectives] or None


@dataclass
class FragmentStats:
    steps: int
    games_finished: int
    seconds_sim: float
    seconds_infer: float


class RolloutWorker:
    """One batch of games plus a copy of the policy; ``fill(views)`` writes one fragment.

    With ``latest`` (``train.acting = "server"``) the latest network acts in the inference server instead
    (runtime/inference.py) and the worker holds no copy of it: it still reads the version, the schedule values
    and the opponent pool from the parameter store between fragments, and still runs past versions and scripted
    bots itself."""

    def __init__(
        self,
        recipe: Recipe,
        schema: ObsSchema,
        params: ParameterStore,
        seed: int,
        *,
        run_dir: Path | None = None,
        worker_id: int = 0,
        latest: InferenceClient | None = None,
    ):
        self.recipe = recipe
        self.params = params
        self.worker_id = worker_id
        self.team_size = recipe.game.team_size
        self.games = recipe.train.games_per_worker
        self.agents = self.games * 2 * self.team_size
        self.env = MobaEnv(recipe.game, self.games, seed, schema)
        # A change of the game (``fivectl anneal``): the one being annealed in runs in the published fraction of
        # new games; a kept one in every game. Set before the first games start.
        self.change, self.change_fraction = game_change(recipe, params)
        if self.change is not None:
            self.env.set_change(self.change, self.change_fraction)
        objectives = recipe.model.aux_objectives
        self.objectives = ObjectiveTracker(self.env, objectives) if objectives else None
        torch.manual_seed(seed)  # past versions sample from it (and, acting here, the latest)
        self.remote = latest
        self.net: PolicyNet | None = None
        self.actor: TracedActor | InferenceClient
        if latest is None:
            self.net = PolicyNet(schema, recipe.model, self.team_size, obs_clip=recipe.train.obs_clip)
            self.net.eval()
            self.actor = TracedActor(self.net)  # the same act, replayed from a recorded graph (model/traced.py)
        else:
            self.actor = latest
        self.version = -1
        self.oldest_acted = -1  # the oldest version the latest network acted with in the current fragment
        self.team_spirit = recipe.reward.team_spirit.start
        self.off_lane = recipe.reward.off_lane.start
        self.pool: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0))
        self.raw_obs, self.joined_midway = stagger_game_starts(
            self.env, self.env.reset(), recipe.train.game_phases, np.random.default_rng([seed, 1])
        )  # raw_obs [G, 2k, ...]: what the scripted bots read
        self.obs = self._flat(self.raw_obs)
        lstm = recipe.model.lstm_size
        self.state = (torch.zeros(1, self.agents, lstm), torch.zeros(1, self.agents, lstm))
        self.first = torch.ones(self.agents, dtype=torch.bool)
        self.opponents = OpponentSet(recipe, schema, run_dir, self.games, np.random.default_rng(seed))
        self.needs_opponent = np.ones(self.games, dtype=bool)  # games about to start
        self.replays = TrainingReplays.for_worker(recipe, self.env, run_dir, seed)  # None: replay_every = 0

    def _flat(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """[G, A, ...] -> [G*A, ...]: teammates stay contiguous (agent order is team0 heroes, team1 heroes)."""
        return {k: v.reshape(self.agents, *v.shape[2:]) for k, v in obs.items()}

    def close(self) -> None:
        """Drop the replays of games still being recorded (their partial files), when the worker stops."""
        if self.replays is not None:
            self.replays.close()
        if self.remote is not None:
            self.remote.close()

    def refresh_params(self) -> None:
        if self.params.version != self.version:
            self.version, scalars = self.params.read_into(self.net)
            self.team_spirit = scalars["team_spirit"]
            self.off_lane = scalars["off_lane"]
            self.opponents.bot_fraction = scalars["bot_fraction"]
            self.pool = self.params.last_pool
            if recipe_anneals(self.recipe) and scalars["change_fraction"] != self.change_fraction:
                self.change_fraction = scalars["change_fraction"]
                self.env.set_change(self.change, self.change_fraction)  # games that start from now on

    @torch.no_grad()
    def fill(self, views: dict[str, np.ndarray], ctrl_row: np.ndarray | None = None) -> FragmentStats:
        self.refresh_params()
        # Acting here, the version just read acts throughout. In the server, each answer's: no older than this
        # one (the server reads the store after this did), so the control row's version stays a lower bound.
        self.oldest_acted = self.version if self.remote is None else NO_ANSWER
        if ctrl_row is not None:
            ctrl_row[CTRL_VERSION] = self.version
        T = views["reward"].shape[0]
        G, k = self.games, self.team_size
        bptt = self.recipe.train.bptt
        t_sim = t_infer = 0.0
        finished = 0
        for t in range(T):
            tic = time.perf_counter()
            if t % bptt == 0:
                h, c = self.state
                views["h_win"][t // bptt] = h[0].numpy()
                views["c_win"][t // bptt] = c[0].numpy()
            for key, value in self.obs.items():
                views[f"obs.{key}"][t] = value
            views["first"][t] = self.first.numpy()
            views["networth"][t] = hero_networth(self.env.state).reshape(-1)
            self.game_variant = self.env.variant.copy() if self.change is not None else False
            # Opponents change only between games (paper N): draw them for the games starting now.
            self.opponents.assign(self.needs_opponent, self.pool)
            self.opponents.drop_missing()
            trained = self.opponents.train_mask()  # the agents the latest network plays this step
            recording = self.replays is not None and self.replays.active
            if recording:
                self.replays.label(self.opponents.opponent, self.opponents.learner_side, self.version, LATEST)
            obs_t = {key: torch.from_numpy(value) for key, value in self.obs.items()}
            # a recorded game takes the objective predictions from the same forward pass (the aux heads only)
            out = self.act_latest(obs_t, trained, with_aux=recording)
            self.opponents.act(obs_t, self.first, out.actions)
            self.opponents.act_bots(self.env, self.raw_obs, out.actions)
            actions = out.actions.numpy().astype(np.int32)
            toc = time.perf_counter()
            predictions = None
            if recording:
                predictions = self.replays.predictions(out, trained, self.recipe.model.aux_objectives)
            step = self.decide(actions.reshape(G, 2 * k, 4), predictions)
            tac = time.perf_counter()
            t_infer += toc - tic
            t_sim += tac - toc

            done = step.done
            done_agents = np.repeat(done, 2 * k)
            views["actions"][t] = actions
            views["logprob"][t] = out.logprob.numpy()
            views["value"][t] = out.value.numpy()
            views["win_prob"][t] = out.win_prob.numpy()
            views["reward"][t] = step.rewards.reshape(-1)
            views["components"][t] = step.components.reshape(self.agents, -1)
            views["done"][t] = done_agents
            views["outcome"][t] = outcome_of(step.winner, done, k)
            views["train"][t] = trained
            views["opponent"][t] = self.opponents.opponent
            views["learner_side"][t] = self.opponents.learner_side
            # A game the policy took over midway (stagger.py) ends as usual, but is no result of the policy's.
            counted = done & ~self.joined_midway
            self.joined_midway &= ~done
            views["winner"][t] = np.where(counted, step.winner, -1)
            views["game_seconds"][t] = np.where(counted, step.game_seconds, 0.0)
            views["invalid_actions"][t] = step.invalid.sum(axis=1)
            views["variant"][t] = self.game_variant
            if step.events is not None:
                views["objective_events"][t] = step.events.reshape(self.agents, -1)
            finished += int(done.sum())

            self.obs = self._flat(step.obs)  # decide() has moved self.raw_obs on
            self.state = out.state
            self.first = torch.from_numpy(done_agents.copy())
            self.needs_opponent = done
            if ctrl_row is not None:
                ctrl_row[CTRL_HEARTBEAT] = time.time()
                ctrl_row[CTRL_STEPS] += 1
        # Bootstrap values for the step after the fragment (GAE at fragment ends), from the same policy version.
        obs_t = {key: torch.from_numpy(v) for key, v in self.obs.items()}
        tail = self.act_latest(obs_t, self.opponents.train_mask(), with_aux=True)
        views["last_value"][...] = tail.value.numpy()
        views["last_win_prob"][...] = tail.win_prob.numpy()
        views["last_networth_rank"][...] = tail.aux["networth_rank"].numpy()
        if self.objectives is not None:
            views["last_objectives"][...] = tail.aux["objectives"].numpy()
        # The oldest version that acted (conservative staleness): the learner measures staleness from it.
        views["header"][:] = (self.oldest_acted, self.worker_id, 0, 1)
        if ctrl_row is not None:
            ctrl_row[CTRL_SIM_S] += t_sim
            ctrl_row[CTRL_INFER_S] += t_infer
        return FragmentStats(T, finished, t_sim, t_infer)

    def act_latest(self, obs: dict[str, torch.Tensor], trained: np.ndarray, with_aux: bool) -> ActOutput:
        """The latest network's step for the agents it plays (``trained``, bool [agents]), in rows for every agent: the
        rows of past versions and bots are left out of the forward pass (zeros in the outputs, their LSTM
        state kept; no one reads either). The more games against bots and past versions, the fewer rows each
        ``act`` computes."""
        rows = np.flatnonzero(trained)
        if self.remote is not None:
            out = self.remote.act_on_rows(obs, self.state, self.first, rows=rows, with_aux=with_aux)
            self.oldest_acted = min(self.oldest_acted, self.remote.version)
            return out
        if rows.size == self.agents:
            return self.actor.act(obs, self.state, self.first, with_aux=with_aux)
        return act_on_rows(
            self.actor, obs, self.state, self.first, rows=rows, team_size=self.team_size, with_aux=with_aux
        )

    def decide(self, actions: np.ndarray, predictions: dict[str, np.ndarray] | None = None) -> DecisionStep:
        """Play one decision, ``actions`` [G, 2k, 4], for ``model.decide_every`` env steps: the policies' heroes
        hold their orders after the first (``HOLD``), the scripted bots act on every one. Leaves ``self.raw_obs``
        at the last env step's observation (the bots read it). The steps before the last encode only the
        action masks, all that the bots and the game read of them.
        ``predictions``: the learner's, for replays."""
        G, k = self.games, self.team_size
        step: DecisionStep | None = None
        for sub in range(self.recipe.model.decide_every):
            if sub > 0:
                actions = np.zeros((G, 2 * k, 4), dtype=np.int32)
                actions[..., 0] = HOLD
                held = torch.from_numpy(actions.reshape(G * 2 * k, 4))
                self.opponents.act_bots(self.env, self.raw_obs, held)
            if self.objectives is not None:
                self.objectives.before_step()
            last = sub == self.recipe.model.decide_every - 1  # the policies read only the last step's obs
            obs, components, done, info = self.env.step(actions, masks_only=not last)
            if self.replays is not None:
                self.replays.step(actions, done, info, predictions if sub == 0 else None)
                self.replays.games_started(done, self.version)
            rewards = shape_rewards(
                components, self.recipe.reward, info["game_time"], k, self.team_spirit, self.off_lane
            )
            winner = np.asarray(info["winner"]).astype(np.int8)
            seconds = np.asarray(info["game_time"], dtype=np.float64)
            invalid = np.asarray(info["invalid_actions"]).reshape(G, 2 * k)
            events = None
            if self.objectives is not None:
                events = self.objectives.events(done, winner, info["game_time"]).reshape(G, 2 * k, -1)
            self.raw_obs = obs
            if step is None:
                step = DecisionStep(obs, rewards, components, done, winner, seconds, invalid, events)
                continue
            playing = ~step.done  # games that ended earlier in this decision are done with this sample
            step.obs = obs
            step.rewards = step.rewards + np.where(playing[:, None], rewards, 0.0).astype(np.float32)
            step.components = step.components + np.where(playing[:, None, None], components, 0.0)
            step.winner = np.where(playing & done, winner, step.winner)
            step.game_seconds = np.where(playing & done, seconds, step.game_seconds)
            step.invalid = step.invalid + np.where(playing[:, None], invalid, 0)
            if events is not None:
                step.events |= events & playing[:, None, None]
            step.done = step.done | done
        assert step is not None
        return step


def start_rollout_worker(
    recipe: Recipe,
    schema: ObsSchema,
    params: ParameterStore,
    seed: int,
    *,
    run_dir: Path | None,
    worker_id: int,
    latest: InferenceClient | None = None,
) -> RolloutWorker:
    """What every transport runs before its first fragment (a worker process, a Ray actor): compile or load the
    game's kernels, then build the games and the policy (``latest``: the inference server's client instead)."""
    warm_up_game(recipe, schema)
    return RolloutWorker(recipe, schema, params, seed, run_dir=run_dir, worker_id=worker_id, latest=latest)


def outcome_of(winner: np.ndarray, done: np.ndarray, team_size: int) -> np.ndarray:
    """Per agent at a game's last step: 1 if its team won, 0 if it lost, 0.5 for a draw; 0 elsewhere."""
    team_of_agent = np.repeat(np.array([0, 1]), team_size)  # [2k]
    won = (winner[:, None] == team_of_agent[None, :]).astype(np.float32)
    draw = (winner < 0)[:, None]
    outcome = np.where(draw, 0.5, won)
    return np.where(done[:, None], outcome, 0.0).reshape(-1).astype(np.float32)


def worker_main(
    *,
    worker_id: int,
    generation: int,
    recipe_dict: dict,
    schema_json: str,
    seed: int,
    slots: SharedBlock,
    params: SharedBlock,
    ctrl: SharedBlock,
    free_conn,
    full_conn,
    run_dir: str | None = None,
    inference: SharedBlock | None = None,
    infer_conn=None,
) -> None:
    """Entry point of a rollout worker process (``generation``: how many workers this one replaces).

    ``slots`` (the fragment slots), ``params`` (the parameter store) and ``ctrl`` (``control_specs``) are shared
    memory the learner created. Slot numbers arrive on ``free_conn`` and go back on ``full_conn``: pipes of this
    worker alone, so a worker killed at any moment can leave nothing locked that another process waits on (a
    shared ``mp.Queue`` would: its reader holds a cross-process lock while it blocks). With ``inference`` (the
    request block) and ``infer_conn`` the latest network acts in the inference server (runtime/inference.py)."""
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # the learner decides when to stop (Ctrl-C writes a checkpoint)
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    keep_freed_memory()
    from fivectl.config import recipe_from_dict

    recipe = recipe_from_dict(recipe_dict)
    schema = ObsSchema.from_json(schema_json)
    slot_block = slots.attach()
    param_store = ParameterStore([ArraySpec(*s) for s in params.specs], shm_name=params.name)
    ctrl_block = ctrl.attach()
    control = ctrl_block.slots[0]
    row = control["workers"][worker_id]
    stop = control["stop"]
    row[CTRL_HEARTBEAT] = time.time()
    learner = os.getppid()
    while param_store.version < 0 and not stop[0]:
        if os.getppid() != learner:
            return  # the learner died before its first publish: nothing will ever come
        time.sleep(0.01)
    latest = InferenceClient(inference, worker_id, infer_conn) if inference is not None else None
    # compile or load the game's kernels before the heartbeat clock starts
    worker = start_rollout_worker(
        recipe,
        schema,
        param_store,
        seed,
        run_dir=Path(run_dir) if run_dir else None,
        worker_id=worker_id,
        latest=latest,
    )
    views = None
    row[CTRL_HEARTBEAT] = time.time()
    row[CTRL_READY] = 1.0
    try:
        while not stop[0]:
            tic = time.perf_counter()
            if not free_conn.poll(0.2):
                row[CTRL_HEARTBEAT] = time.time()
                continue
            slot = decode_slot(free_conn.recv_bytes())
            row[CTRL_WAIT_S] += time.perf_counter() - tic
            control["slot_state"][slot] = SLOT_FILLING
            views = slot_block.slots[slot]
            worker.fill(views, row)
            control["slot_state"][slot] = SLOT_FULL
            full_conn.send_bytes(encode_slot(slot))
    except (EOFError, BrokenPipeError):
        pass  # the learner has gone (or the inference server: the learner replaces it, and this worker)
    finally:
        worker.close()
        del worker, views, row, control, stop
        for block in (slot_block, param_store, ctrl_block):
            block.close()


def encode_slot(slot: int) -> bytes:
    # Four bytes: one write well under PIPE_BUF, so a process killed mid-send cannot leave half a message.
    return int(slot).to_bytes(4, "little")


def decode_slot(data: bytes) -> int:
    return int.from_bytes(data, "little")
