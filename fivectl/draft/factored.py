"""The first-frame win probability of every lineup, factored by what depends on the whole lineup.

:class:`fivectl.draft.model.FirstFrame` builds both teams' first observations for each lineup and runs the whole
network on them: hours for a 5v5 table (``benchmarks/RESULTS.md``). Yet in
the fogged first frame an agent's observation depends on the lineup only through

- its own team (its hero, stats, abilities, items, the allies it sees: ``global.ally_lineup``, the unit sets),
- the enemy team through ``global.enemy_lineup`` alone (the enemies are in fog), and
- its own lane assignment through ``self.lane_assign`` (heroes start at the fountain whatever their lane).

So :class:`FactoredFirstFrame` computes once per (side, team of the pool, slot) everything else, and per lineup
only what varies (paper App. D.2 computes the same P(win); this only orders the arithmetic differently):

1. every group but ``global`` and ``self`` goes through the encoder and its columns of the FC layer once per
   (side, team, slot): ``static`` [2, C(n, k), k, F] (FC bias included);
2. ``global``'s first layer is linear in each embedding, an embedding followed by a linear layer is a lookup
   table: ``enemy_table`` [k, n, E] holds the pre-activation each enemy hero adds at each lineup slot, and
   ``global_own`` [2, C(n, k), k, E] everything else of that layer;
3. ``self``'s output (after its ReLU) is kept for each lane value: ``self_out`` [2, C(n, k), k, lanes, E];
4. per lineup, batched: ReLU(global_own + sum of the enemy rows) and self_out through their FC columns, added to
   ``static``, ReLU, the cross-hero max-pool (its pooled columns are the same for the whole team, so their part of
   the LSTM input product is computed once per team, not once per hero), and the LSTM's first step from a zero
   state: c = σ(i)·tanh(g), h = σ(o)·tanh(c) — the forget gate multiplies the zero cell and is skipped — and only
   the win-probability head.

Lane assignments are drawn exactly as :class:`FirstFrame` draws them (game slot j of a batch, seed + sample), so
both give the same table to float rounding. The factorization rests on what the first frame shows; ``check``
compares it with the direct path on sample lineups and ``precompute`` falls back to the direct path if they
differ (a future observation that lets the enemy team into another field).
"""

from __future__ import annotations

import numpy as np
import torch

from fivectl.draft.lineups import LineupSpace
from fivectl.draft.model import DraftModel, FirstFrame
from fivectl.errors import BadInput
from fivectl.model.layout import field_input_slices

LINEUP_GROUP, LANE_GROUP = "global", "self"
ENEMY_FIELD, LANE_FIELD = "enemy_lineup", "lane_assign"
GATES_IOG = (0, 3, 2)  # rows of i, o, g in torch's LSTM gate order (i, f, g, o); a zero cell makes f irrelevant


def factorable(model: DraftModel) -> bool:
    """The schema has the layout the factorization reads: the enemy lineup in the vector group ``global``
    and the lane assignment in the vector group ``self``."""
    groups = {g.name: g for g in model.schema.groups}
    need = ((LINEUP_GROUP, ENEMY_FIELD), (LANE_GROUP, LANE_FIELD))
    return all(
        name in groups and groups[name].kind == "vector" and field in groups[name].cat_columns()
        for name, field in need
    )


def team_ranks(positions: np.ndarray, binom: np.ndarray) -> np.ndarray:
    """int64 [...]: colex rank among all k-subsets of the pool of teams given by ascending pool positions
    [..., k] (sum over the i-th smallest position p of C(p, i + 1), as ``subset_rank``)."""
    k = positions.shape[-1]
    return binom[positions, np.arange(1, k + 1)].sum(axis=-1)


class FactoredFirstFrame:
    """``win_probs(lineups)`` of :class:`FirstFrame` (same lane draws, same numbers), for lineups whose teams
    are ascending hero ids of the pool (as ``LineupSpace.lineups`` gives them)."""

    def __init__(
        self, model: DraftModel, space: LineupSpace, batch: int, seed: int = 0, lane_samples: int = 1,
        setup_batch: int = 512,
    ):  # fmt: skip
        if not factorable(model):
            raise BadInput(
                f"schema v{model.schema.version}: no global.enemy_lineup / self.lane_assign to factor"
            )
        self.model, self.space, self.k = model, space, space.k
        self.direct = FirstFrame(model, batch, seed, lane_samples)  # its games draw the lanes
        self.batch, self.lane_samples = self.direct.batch, self.direct.lane_samples
        self.lane_col = model.schema.group(LANE_GROUP).cat_columns()[LANE_FIELD].start
        self.lanes = self._lane_draws()
        with torch.inference_mode():
            self._tables(setup_batch)
            self._weights()

    # ------------------------------------------------------------------ once per (side, team, slot)

    def _lane_draws(self) -> list[np.ndarray]:
        """int64 [batch, 2k] per lane sample: the lanes the direct path's game slots get."""
        env, out = self.direct.env, []
        for sample in range(self.lane_samples):
            env.seed = self.direct.seed + sample
            out.append(env.reset()[f"{LANE_GROUP}.cat"][:, :, self.lane_col].astype(np.int64))
        return out

    def _tables(self, setup_batch: int) -> None:
        """static, global_own and self_out of every team on either side (the module docstring's 1-3)."""
        from fivectl.sim import MobaEnv

        model, space, k = self.model, self.space, self.k
        enc = model.net.encoder
        teams = space._team0  # every team's pool positions, in the rank order of team_ranks
        fillers = space._left[:, :k]  # an enemy team for each: it shows only in global.enemy_lineup, replaced below
        n_teams = len(teams)
        n_lanes = next(f.vocab for f in model.schema.group(LANE_GROUP).fields if f.name == LANE_FIELD)
        width, embed = model.net.cfg.fc_size, model.net.cfg.unit_embed
        self.static = torch.empty(2, n_teams, k, width)
        self.global_own = torch.empty(2, n_teams, k, embed)
        self.self_out = torch.empty(2, n_teams, k, n_lanes, embed)
        g_lineup, g_lane = model.schema.group(LINEUP_GROUP), model.schema.group(LANE_GROUP)
        enemy_cols = field_input_slices(model.schema, model.net.cfg, LINEUP_GROUP, ENEMY_FIELD)[0].index
        enemy_cols = slice(
            enemy_cols.start, enemy_cols.start + k * model.net.cfg.cat_embed
        )  # slots past k: 0
        dynamic = [enc.output_slices[LINEUP_GROUP], enc.output_slices[LANE_GROUP]]
        env = MobaEnv(self.direct.env.cfg, min(setup_batch, n_teams), self.direct.seed, model.schema)
        for side in (0, 1):
            for lo in range(0, n_teams, env.num_games):
                hi = min(n_teams, lo + env.num_games)
                rows = self._side_obs(env, side, teams[lo:hi], fillers[lo:hi])
                flat, _ = enc(rows)
                for part in dynamic:
                    flat[:, part] = 0.0
                self.static[side, lo:hi] = model.net.fc(flat).view(hi - lo, k, width)
                x = enc.group_input(g_lineup, rows)
                x[:, enemy_cols] = 0.0  # the enemy heroes' part comes from enemy_table
                self.global_own[side, lo:hi] = enc.vector[LINEUP_GROUP][0](x).view(hi - lo, k, embed)
                cats = rows[f"{LANE_GROUP}.cat"].clone()
                for lane in range(n_lanes):
                    cats[:, self.lane_col] = lane
                    x = enc.group_input(g_lane, {**rows, f"{LANE_GROUP}.cat": cats})
                    self.self_out[side, lo:hi, :, lane] = enc.vector[LANE_GROUP](x).view(hi - lo, k, embed)
        heroes = torch.from_numpy(space.pool + 1)  # enemy_lineup holds hero id + 1 (0 = empty slot)
        emb = enc.embeds[LINEUP_GROUP][ENEMY_FIELD](heroes)  # [n, e]
        weight, e = enc.vector[LINEUP_GROUP][0].weight, model.net.cfg.cat_embed
        self.enemy_table = torch.stack(
            [emb @ weight[:, enemy_cols.start + s * e : enemy_cols.start + (s + 1) * e].T for s in range(k)]
        )  # [k, n, E]

    def _side_obs(self, env, side: int, teams: np.ndarray, fillers: np.ndarray) -> dict[str, torch.Tensor]:
        """First observations [m * k, ...] of the heroes of ``teams`` (pool positions) playing on ``side``."""
        m, k, pool = len(teams), self.k, self.space.pool
        lineups = np.empty((env.num_games, 2, k), dtype=np.int32)
        lineups[:m, side], lineups[:m, 1 - side] = pool[teams], pool[fillers]
        lineups[m:] = lineups[0]
        env.set_lineups(lineups)
        obs = env.reset()
        agents = slice(side * k, (side + 1) * k)
        return {
            key: torch.from_numpy(np.ascontiguousarray(v[:m, agents].reshape(m * k, *v.shape[2:])))
            for key, v in obs.items()
        }

    def _weights(self) -> None:
        """The per-lineup layers: FC columns of the two varying groups, LSTM input rows of gates i, g, o
        (split at the cross-hero pool), biases, the win head."""
        net, enc = self.model.net, self.model.net.encoder
        fc = net.fc.weight
        varying = [enc.output_slices[LINEUP_GROUP], enc.output_slices[LANE_GROUP]]
        self.w_varying = torch.cat([fc[:, part] for part in varying], dim=1).T.contiguous()  # [2E, F]
        hidden = net.cfg.lstm_size
        rows = torch.cat([torch.arange(g * hidden, (g + 1) * hidden) for g in GATES_IOG])
        w_ih = net.lstm.weight_ih_l0[rows]  # [3H, F]
        self.bias = (net.lstm.bias_ih_l0 + net.lstm.bias_hh_l0)[rows]
        self.pool_width = net.pool_width if self.k > 1 else 0
        self.w_pooled = w_ih[:, : self.pool_width].T.contiguous()  # [pw, 3H]
        self.w_own = w_ih[:, self.pool_width :].T.contiguous()  # [F - pw, 3H]
        self.hidden = hidden

    # ------------------------------------------------------------------ per lineup

    @torch.inference_mode()
    def win_probs(self, lineups: np.ndarray) -> np.ndarray:
        """float64 [m]: P(team 0 wins) of lineups [m <= batch, 2, k] (ascending hero ids per team), lineup j
        with the lanes of the direct path's game slot j."""
        lineups = np.asarray(lineups)
        m = len(lineups)
        if m > self.batch:
            raise BadInput(f"{m} lineups do not fit a batch of {self.batch}")
        positions = np.searchsorted(self.space.pool, lineups)
        if (np.diff(lineups, axis=-1) <= 0).any() or (
            self.space.pool[positions.clip(0, self.space.n - 1)] != lineups
        ).any():
            raise BadInput("lineups for the factored first frame: ascending hero ids of the pool per team")
        ranks = torch.from_numpy(team_ranks(positions, self.space.binom))  # [m, 2]
        pos = torch.from_numpy(positions)
        total = np.zeros(m)
        for sample in range(self.lane_samples):
            lanes = torch.from_numpy(self.lanes[sample][:m].reshape(m, 2, self.k))
            by_team = [
                self._team_win(side, ranks[:, side], pos[:, 1 - side], lanes[:, side]) for side in (0, 1)
            ]
            total += 0.5 * (by_team[0] + 1.0 - by_team[1])
        return total / self.lane_samples

    def _team_win(self, side: int, own: torch.Tensor, enemy: torch.Tensor, lanes: torch.Tensor) -> np.ndarray:
        """float64 [m]: the mean win probability of the heroes of team ``own`` (ranks [m]) on ``side`` against
        ``enemy`` (pool positions [m, k]), with hero lanes [m, k]. Large 2-D products and in-place activations:
        the elementwise work was as long as the products before."""
        m, k, hidden, pw = own.shape[0], self.k, self.hidden, self.pool_width
        enemy_part = self.enemy_table[torch.arange(k), enemy].sum(dim=1, keepdim=True)  # [m, 1, E]
        lineup_out = (self.global_own[side, own] + enemy_part).relu_()  # [m, k, E]
        lane_out = self.self_out[side, own[:, None], torch.arange(k), lanes]  # [m, k, E]
        varying = torch.cat([lineup_out, lane_out], dim=-1).view(m * k, -1)
        x = torch.addmm(self.static[side, own].view(m * k, -1), varying, self.w_varying).relu_()  # [m k, F]
        gates = torch.addmm(self.bias, x[:, pw:], self.w_own)  # [m k, 3H]: i, o, g
        if pw:
            pooled = x[:, :pw].view(m, k, pw).amax(dim=1) @ self.w_pooled  # [m, 3H]: once per team
            gates.view(m, k, -1).add_(pooled[:, None])
        gates[:, : 2 * hidden].sigmoid_()
        cell = gates[:, 2 * hidden :].tanh_().mul_(gates[:, :hidden]).tanh_()  # tanh(c), c = i g
        h = cell.mul_(gates[:, hidden : 2 * hidden])  # o tanh(c)
        win = torch.sigmoid(self.model.net.aux["win"](h).view(m, k))
        return win.double().mean(dim=1).numpy()

    def check(self, lineups: np.ndarray, atol: float = 1e-5) -> float:
        """Largest difference to the direct path on ``lineups``; BadInput beyond ``atol``."""
        diff = float(np.abs(self.win_probs(lineups) - self.direct.win_probs(lineups)).max())
        if not diff <= atol:
            raise BadInput(f"the factored first frame differs from the direct path by {diff:.2e}")
        return diff
