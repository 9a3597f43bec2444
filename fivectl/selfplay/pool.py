"""The self-play opponent pool, exactly as in the OpenAI Five paper, appendix N.

- A fraction ``latest_fraction`` (paper: 80%) of games is played against the latest parameters; the rest against
  past versions i = 1..N, chosen with probability p_i = exp(q_i) / sum_j exp(q_j).
- Every ``add_every`` (paper: 10) iterations the current version joins the pool with q = max(q) (0 for the first).
- After each rollout game against past opponent i: if the current agent won, q_i <- q_i - eta / (N p_i)
  (paper: eta = 0.01); if it lost or drew, nothing changes. Dividing by p_i makes the expected update the same for
  every opponent however often it is sampled, so an opponent's quality falls only with its rate of defeats.
  The games of one batch of results are weighted by the p they were drawn from, the pool's p when the batch
  arrives, not by a p recomputed after each win (see :meth:`OpponentPool.record_results`).

The learner publishes the versions and their p_i with every parameter version; rollout workers draw each game's
opponent from them when the game starts (``fivectl.runtime.opponents.OpponentSet.assign``, the one place opponents
are drawn). The pool state is plain lists and numbers (:meth:`state_dict`) so it is stored in checkpoint attributes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from fivectl.config.selfplay import SelfPlayConfig
from fivectl.errors import BadInput

LATEST = -1
"""Opponent code of the latest parameters (past versions are >= 0, scripted bots < -1)."""
RECENT_GAMES = 200
"""Games against past versions that the recent win rate metric covers."""
STATE_FORMAT = 1


class OpponentPool:
    """Past parameter versions with quality scores q; see the module docstring for the rules."""

    def __init__(self, cfg: SelfPlayConfig):
        self.cfg = cfg
        self._versions: list[int] = []
        self._q: list[float] = []
        self._past_games = 0
        self._past_wins = 0
        self._recent: deque[int] = deque(maxlen=RECENT_GAMES)

    # -- contents -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._versions)

    @property
    def versions(self) -> tuple[int, ...]:
        """Versions in the pool, oldest first (their checkpoints must be kept)."""
        return tuple(self._versions)

    @property
    def q(self) -> np.ndarray:
        return np.array(self._q, dtype=np.float64)

    def probabilities(self) -> np.ndarray:
        """p_i proportional to exp(q_i): the softmax over qualities (empty for an empty pool)."""
        if not self._q:
            return np.zeros(0, dtype=np.float64)
        q = self.q
        weights = np.exp(q - q.max())
        return weights / weights.sum()

    # -- growing the pool ---------------------------------------------------------------------------
    def maybe_add(self, version: int, iteration: int) -> bool:
        """Add ``version`` when ``iteration`` is a multiple of ``add_every``; True when it was added."""
        if iteration % self.cfg.add_every != 0:
            return False
        return self.add(version)

    def add(self, version: int) -> bool:
        """Add ``version`` with q = max(q) (0 for the first); a version already present is not added twice."""
        version = int(version)
        if version < 0:
            raise BadInput(f"opponent pool: versions are >= 0, got {version}")
        if version in self._versions:
            return False
        self._q.append(max(self._q) if self._q else 0.0)
        self._versions.append(version)
        self._drop_oldest_beyond_max()
        return True

    def _drop_oldest_beyond_max(self) -> None:
        if self.cfg.max_pool <= 0:
            return
        excess = len(self._versions) - self.cfg.max_pool
        if excess > 0:
            del self._versions[:excess]
            del self._q[:excess]

    # -- learning from results ----------------------------------------------------------------------
    def record_result(self, opponent_version: int, agent_won: bool) -> None:
        """A finished game of the current agent against ``opponent_version`` (:meth:`record_results` of one)."""
        self.record_results([opponent_version], [agent_won])

    def record_results(
        self, opponent_versions: Sequence[int] | np.ndarray, agent_won: Sequence[bool] | np.ndarray
    ) -> None:
        """Finished games of the current agent against ``opponent_versions``, in order.

        Games against the latest parameters change nothing. A win against past opponent i applies
        q_i <- q_i - eta / (N p_i), with N and p as they were when this batch arrived: the distribution its games'
        opponents were drawn from (up to the few versions the workers' copy lags). Recomputing p after each win
        fed back: the games of a round share a few past versions (``selfplay.past_versions_per_batch``), and a
        run of wins against one rarely drawn version lowered its q by ever larger steps until p_i underflowed to
        0 and the update divided by zero (a quickstart run failed so at 14.4M samples). A win against an
        opponent whose p is 0 (q hundreds below the best; drawn from the workers' older copy) leaves its q.
        A loss or draw only counts for the win rate, and so does an opponent dropped from the pool while its
        game ran.
        """
        opponents = np.asarray(opponent_versions).reshape(-1)
        won = np.asarray(agent_won, dtype=bool).reshape(-1)
        if opponents.shape != won.shape:
            raise BadInput(f"opponent pool: {opponents.size} opponents but {won.size} results")
        p = self.probabilities()
        index = {version: i for i, version in enumerate(self._versions)}
        for version, w in zip(opponents.tolist(), won.tolist(), strict=True):
            if version == LATEST:
                continue
            self._past_games += 1
            self._past_wins += int(w)
            self._recent.append(int(w))
            i = index.get(int(version))
            if w and i is not None and p[i] > 0.0:
                self._q[i] -= self.cfg.eta / (len(self._versions) * float(p[i]))

    # -- metrics ------------------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """Pool size, q summary, entropy of p (nats), win rate against past versions (all and recent games).

        Statistics with nothing to summarize (empty pool, no past games) are NaN.
        """
        p = self.probabilities()
        q = self.q
        empty = q.size == 0
        return {
            "pool_size": float(len(self._versions)),
            "pool_q_min": math.nan if empty else float(q.min()),
            "pool_q_mean": math.nan if empty else float(q.mean()),
            "pool_q_max": math.nan if empty else float(q.max()),
            "pool_p_entropy": math.nan if empty else float(-(p * np.log(np.maximum(p, 1e-300))).sum()),
            "pool_past_games": float(self._past_games),
            "pool_past_win_rate": self._past_wins / self._past_games if self._past_games else math.nan,
            "pool_past_win_rate_recent": sum(self._recent) / len(self._recent) if self._recent else math.nan,
        }

    # -- persistence --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """JSON-ready state (lists, ints, floats); floats round-trip exactly through JSON."""
        return {
            "format": STATE_FORMAT,
            "versions": list(self._versions),
            "q": [float(x) for x in self._q],
            "past_games": self._past_games,
            "past_wins": self._past_wins,
            "recent": list(self._recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; a malformed state raises BadInput and leaves the pool unchanged."""
        versions, q, past_games, past_wins, recent = _parse_state(state)
        self._versions = versions
        self._q = q
        self._past_games = past_games
        self._past_wins = past_wins
        self._recent = deque(recent, maxlen=RECENT_GAMES)
        self._drop_oldest_beyond_max()


def _parse_state(state: Any) -> tuple[list[int], list[float], int, int, list[int]]:
    def bad(why: str) -> BadInput:
        return BadInput(f"opponent pool state: {why}")

    if not isinstance(state, dict):
        raise bad("must be a JSON object")
    if state.get("format") != STATE_FORMAT:
        raise bad(f"unknown format {state.get('format')!r} (expected {STATE_FORMAT})")
    try:
        versions = [int(v) for v in state["versions"]]
        q = [float(x) for x in state["q"]]
        past_games = int(state["past_games"])
        past_wins = int(state["past_wins"])
        recent = [int(r) for r in state["recent"]]
    except KeyError as e:
        raise bad(f"missing {e.args[0]!r}") from None
    except (TypeError, ValueError) as e:
        raise bad(str(e)) from None
    if len(versions) != len(q):
        raise bad(f"{len(versions)} versions but {len(q)} q values")
    if len(set(versions)) != len(versions) or any(v < 0 for v in versions):
        raise bad("versions must be distinct and >= 0")
    if not all(math.isfinite(x) for x in q):
        raise bad("q values must be finite")
    if not 0 <= past_wins <= past_games or any(r not in (0, 1) for r in recent):
        raise bad("inconsistent win counts")
    return versions, q, past_games, past_wins, recent[-RECENT_GAMES:]
