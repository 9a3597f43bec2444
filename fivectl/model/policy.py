"""The OpenAI Five policy/value network built from an observation schema (paper appendix H; HoK eq. 1).

    obs -> ObsEncoder (per-group processing, Figure 7) -> FC + ReLU -> cross-hero pool (Figure 8)
        -> single-layer LSTM -> heads (Figure 9): primary (masked), delay, unit target by attention, 9x9 offset,
           value, and the auxiliary predictions of appendix D (win probability, net-worth rank, team objectives).

One network is applied to every hero ("replicas with shared weights"): the batch dimension holds agents, with
teammates in consecutive runs of ``team_size``, which is all the cross-hero pool needs to find a team.

The action is factorized (paper H, HoK "control dependency decoupling"): log pi(a) = log pi(primary)
+ log pi(delay) + [uses target] log pi(target | primary) + [uses offset] log pi(offset). Parameters the chosen
primary does not use (``param_mask``) are left out of the log-probability and the entropy, so they get no gradient.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from fivectl.config.model import ModelConfig
from fivectl.errors import BadInput
from fivectl.model.attention import unit_scores
from fivectl.model.encoder import Obs, ObsEncoder, UnitEmbeddings
from fivectl.model.heads import log_prob_and_entropy, masked_logits, sample, scale_grad
from fivectl.schema.spec import ObsSchema

State = tuple[torch.Tensor, torch.Tensor]

PRIMARY, DELAY, TARGET, OFFSET = range(4)
"""Columns of the action tensor, as the simulator expects them."""


@dataclass
class ActOutput:
    actions: torch.Tensor  # int64 [B, 4]: primary, delay, target slot, offset
    logprob: torch.Tensor  # [B]
    value: torch.Tensor  # [B]
    win_prob: torch.Tensor  # [B]
    state: State  # (h, c), each [1, B, lstm_size]
    # with_aux: "networth_rank" [B, team_size] rank probabilities, "objectives" [B, n] probabilities
    aux: dict[str, torch.Tensor] | None = None


@dataclass
class EvalOutput:
    logprob: torch.Tensor  # [T, B]
    entropy: torch.Tensor  # [T, B]
    value: torch.Tensor  # [T, B]
    win_logit: torch.Tensor  # [T, B]; gradient into the trunk scaled by cfg.win_prob_grad_weight
    aux: dict[str, torch.Tensor]  # "networth_rank" [T, B, team_size], "objectives" [T, B, n]: stop-gradient
    state: State  # LSTM state after the last step (for the next window)
    head_entropy: dict[str, torch.Tensor]  # per head [T, B], masked like ``entropy`` (for logging)


def obs_to_torch(obs: Mapping[str, np.ndarray | torch.Tensor]) -> Obs:
    """Encoded arrays (numpy, from the simulator or a rollout) as tensors, without copying."""
    return {k: torch.as_tensor(v) for k, v in obs.items()}


def cross_hero_pool(x: torch.Tensor, team_size: int, width: int) -> torch.Tensor:
    """Replace the first ``width`` columns of each hero's vector by their max over its team (paper H, Figure 8).

    ``x``: [..., B, F] with teammates in consecutive runs of ``team_size`` along B; the other columns stay.
    """
    if width == 0 or team_size == 1:
        return x
    *lead, b, f = x.shape
    pooled = x[..., :width].reshape(*lead, b // team_size, team_size, width).amax(dim=-2, keepdim=True)
    pooled = pooled.expand(*lead, b // team_size, team_size, width).reshape(*lead, b, width)
    return torch.cat([pooled, x[..., width:]], dim=-1)


def run_lstm(lstm: nn.LSTM, x: torch.Tensor, state: State, first: torch.Tensor) -> tuple[torch.Tensor, State]:
    """The fused LSTM over ``x`` [T, B, F], zeroing a column's state before step t where ``first[t]`` is set.

    The window is split only at the steps where some column resets (a new game started), and each piece runs as
    one fused call; windows without an inner reset (the common case) are a single call.
    """
    t_total = x.shape[0]
    if t_total == 1 and not torch.is_grad_enabled():
        return lstm_step(lstm, x, state, first[0])
    inner_resets = (first[1:].any(dim=1).nonzero().flatten() + 1).tolist() if t_total > 1 else []
    bounds = [0, *inner_resets, t_total]
    h, c = state
    outputs = []
    for t0, t1 in zip(bounds[:-1], bounds[1:], strict=True):
        keep = (~first[t0]).to(x.dtype)[None, :, None]
        out, (h, c) = lstm(x[t0:t1], (h * keep, c * keep))
        outputs.append(out)
    return (outputs[0] if len(outputs) == 1 else torch.cat(outputs)), (h, c)


def lstm_step(lstm: nn.LSTM, x: torch.Tensor, state: State, first: torch.Tensor) -> tuple[torch.Tensor, State]:
    """One step of ``lstm`` without gradient (acting): ``x`` [1, B, F], ``first`` [B]. The cell is two matrix
    products and the fused gates (``torch.lstm_cell``): oneDNN's fused LSTM, which training runs over whole
    windows, prepares its weights on every call, which for one step of a hundred agents is most of the work.
    The same function; the last bits may differ from the fused call."""
    keep = (~first).to(x.dtype)[:, None]
    h, c = torch.lstm_cell(
        x[0],
        (state[0][0] * keep, state[1][0] * keep),
        lstm.weight_ih_l0,
        lstm.weight_hh_l0,
        lstm.bias_ih_l0,
        lstm.bias_hh_l0,
    )
    return h.unsqueeze(0), (h.unsqueeze(0), c.unsqueeze(0))


def small_mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


def offset_grid_side(n_offset: int) -> int:
    """Side of the square offset grid (9 for the paper's 81 offsets)."""
    side = math.isqrt(n_offset)
    if side * side != n_offset:
        raise BadInput(f"model.offset_xy needs a square offset grid; the schema has {n_offset} offsets")
    return side


class PolicyNet(nn.Module):
    """Policy, value and auxiliary heads over a schema; see the module docstring for the structure."""

    def __init__(self, schema: ObsSchema, cfg: ModelConfig, team_size: int, obs_clip: float = 5.0):
        super().__init__()
        if team_size < 1:
            raise BadInput(f"team_size must be >= 1, got {team_size}")
        self.schema = schema
        self.cfg = cfg
        self.team_size = team_size
        self.n_targets = schema.n_targets
        self.encoder = ObsEncoder(schema, cfg, obs_clip)
        self.fc = nn.Linear(self.encoder.out_width, cfg.fc_size)
        self.pool_width = int(round(cfg.fc_size * cfg.cross_hero_fraction))
        self.lstm = nn.LSTM(cfg.fc_size, cfg.lstm_size)
        hidden, action = cfg.lstm_size, schema.action
        self.heads = nn.ModuleDict(
            {"primary": nn.Linear(hidden, action.n_primary), "value": nn.Linear(hidden, 1)}
        )
        if cfg.learn_delay:
            self.heads["delay"] = nn.Linear(hidden, action.delays)
        if cfg.offset_xy:
            side = offset_grid_side(action.n_offset)
            self.heads["offset_x"] = nn.Linear(hidden, side)
            self.heads["offset_y"] = nn.Linear(hidden, side)
        else:
            self.heads["offset"] = nn.Linear(hidden, action.n_offset)
        if self.n_targets:
            self.heads["target_query"] = nn.Linear(hidden, cfg.attention_size)
            self.heads["target_key"] = nn.Linear(cfg.unit_embed, cfg.attention_size)
        self.aux = nn.ModuleDict(
            {
                "win": small_mlp(hidden, cfg.aux_hidden, 1),
                "networth_rank": small_mlp(hidden, cfg.aux_hidden, team_size),
            }
        )
        if cfg.aux_objectives:
            self.aux["objectives"] = small_mlp(hidden, cfg.aux_hidden, len(cfg.aux_objectives))

    # ----------------------------------------------------------------------------------------------- state

    def initial_state(self, batch: int) -> State:
        weight = self.fc.weight
        zeros = torch.zeros(1, batch, self.cfg.lstm_size, dtype=weight.dtype, device=weight.device)
        return zeros, zeros.clone()

    # ----------------------------------------------------------------------------------------------- trunk

    def _trunk(
        self, obs: Obs, state: State, first: torch.Tensor
    ) -> tuple[torch.Tensor, list[UnitEmbeddings], State]:
        """obs [T*B, ...] (time-major) -> LSTM outputs [T, B, H], unit embeddings per target set (observed
        units of [T*B, count]), state. ``first`` [T, B] gives the shape."""
        t, b = first.shape
        if b % self.team_size:
            raise BadInput(f"batch of {b} agents is not a whole number of teams of {self.team_size}")
        flat, units = self.encoder(obs)
        x = torch.relu(self.fc(flat)).view(t, b, -1)
        x = cross_hero_pool(x, self.team_size, self.pool_width)
        out, state = run_lstm(self.lstm, x, state, first.bool())
        return out, units, state

    # ----------------------------------------------------------------------------------------------- heads

    def _target_logits(
        self, h: torch.Tensor, units: list[UnitEmbeddings], allowed: torch.Tensor
    ) -> torch.Tensor:
        """HoK eq. 1: p(t|a) = softmax(FC(h_LSTM) . h_keys^T), scaled by 1/sqrt(d) and restricted to ``allowed``.

        With keys k_j = W_k u_j + b_k, q . k_j = (W_k^T q) . u_j + q . b_k: the query is mapped into the unit
        embedding space once per agent instead of projecting every unit (same scores, far less work). The
        products are taken on the observed units only; an empty slot's u_j is 0, so its score is q . b_k.
        """
        query = self.heads["target_query"](h)  # [N, A]
        key = self.heads["target_key"]
        q_units = query @ key.weight  # [N, E]
        n = q_units.shape[0]
        scores = []
        for u in units:
            dots = unit_scores(u.packed, u.samples, q_units)  # [R]
            scores.append(dots.new_zeros(n * u.count).index_copy(0, u.rows, dots).view(n, u.count))
        scores = torch.cat(scores, dim=-1)  # [N, M]
        scores = (scores + (query @ key.bias).unsqueeze(-1)) / math.sqrt(query.shape[-1])
        return masked_logits(scores, allowed)

    def _offset_logits(self, h: torch.Tensor) -> torch.Tensor:
        """[N, n_offset] logits over the grid, cell = y * side + x (the game's layout). With ``offset_xy`` they are
        logit_y[y] + logit_x[x], whose softmax is exactly p(x) p(y): log-probability and entropy add up per axis."""
        if not self.cfg.offset_xy:
            return self.heads["offset"](h)
        logit_x, logit_y = self.heads["offset_x"](h), self.heads["offset_y"](h)
        return (logit_y.unsqueeze(-1) + logit_x.unsqueeze(-2)).flatten(-2)

    def _delay(
        self, h: torch.Tensor, actions: torch.Tensor | None, deterministic: bool, with_entropy: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """-> delay [N], its log-probability and entropy; without ``learn_delay`` every action acts at once."""
        if not self.cfg.learn_delay:
            delay = torch.zeros(h.shape[0], dtype=torch.long, device=h.device)
            zero = torch.zeros(h.shape[0], dtype=h.dtype, device=h.device)
            return (delay if actions is None else actions[:, DELAY]), zero, zero
        delay_logits = self.heads["delay"](h)
        delay = sample(delay_logits, deterministic) if actions is None else actions[:, DELAY]
        lp_delay, ent_delay = log_prob_and_entropy(delay_logits, delay, with_entropy)
        return delay, lp_delay, ent_delay

    def _policy(
        self,
        h: torch.Tensor,
        units: list[UnitEmbeddings],
        obs: Obs,
        actions: torch.Tensor | None,
        deterministic: bool,
        with_entropy: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, dict[str, torch.Tensor] | None]:
        """Sample (``actions`` None) or score ``actions`` [N, 4]: -> actions, log-prob, entropy, per-head entropy
        (the last two None without ``with_entropy``: acting needs only the log-probability).

        h [N, H]; obs masks [N, ...]. Heads are decoded in dependency order: primary first, then the target
        restricted to ``target_mask[primary]``.
        """
        n = h.shape[0]
        rows = torch.arange(n, device=h.device)
        primary_logits = masked_logits(self.heads["primary"](h), obs["action_mask"])
        offset_logits = self._offset_logits(h)
        # Sampled in this order (primary, delay, offset) so a seed keeps giving the same actions.
        primary = sample(primary_logits, deterministic) if actions is None else actions[:, PRIMARY]
        delay, lp_delay, ent_delay = self._delay(h, actions, deterministic, with_entropy)
        offset = sample(offset_logits, deterministic) if actions is None else actions[:, OFFSET]
        uses = obs["param_mask"][rows, primary]  # [N, 2]
        lp_primary, ent_primary = log_prob_and_entropy(primary_logits, primary, with_entropy)
        lp_offset, ent_offset = log_prob_and_entropy(offset_logits, offset, with_entropy)
        uses_offset = uses[:, 1]
        zero = torch.zeros_like(lp_primary)
        if self.n_targets:
            allowed = obs["target_mask"][rows, primary]  # [N, M]
            target_logits = self._target_logits(h, units, allowed)
            target = sample(target_logits, deterministic) if actions is None else actions[:, TARGET]
            lp_target, ent_target = log_prob_and_entropy(target_logits, target, with_entropy)
            # A unit action with no valid target is a no-op in the game: its target is not a choice at all.
            uses_target = uses[:, 0] & allowed.any(dim=-1)
        else:
            target = torch.zeros_like(primary) if actions is None else actions[:, TARGET]
            lp_target = ent_target = zero
            uses_target = torch.zeros_like(uses[:, 0])
        # torch.where (not a product): an unused head's gradient is exactly zero.
        logprob = (
            lp_primary
            + lp_delay
            + torch.where(uses_target, lp_target, zero)
            + torch.where(uses_offset, lp_offset, zero)
        )
        entropy = head_entropy = None
        if with_entropy:
            head_entropy = {
                "primary": ent_primary,
                "delay": ent_delay,
                "target": torch.where(uses_target, ent_target, zero),
                "offset": torch.where(uses_offset, ent_offset, zero),
            }
            entropy = sum(head_entropy.values())
        if actions is None:
            actions = torch.stack([primary, delay, target, offset], dim=-1)
        return actions, logprob, entropy, head_entropy

    # Outputs that enter a loss are float32 even under the learner's bfloat16 autocast (a no-op otherwise).

    def value_parameters(self) -> list[nn.Parameter]:
        """The value head's parameters: what trains alone in ``train.value_warmup_samples``."""
        return list(self.heads["value"].parameters())

    def _value(self, h: torch.Tensor) -> torch.Tensor:
        return self.heads["value"](h).squeeze(-1).float()

    def _win_logit(self, h: torch.Tensor) -> torch.Tensor:
        return self.aux["win"](scale_grad(h, self.cfg.win_prob_grad_weight)).squeeze(-1).float()

    def _aux(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        """Stop-gradient predictions (paper D): they train on their own and never move the trunk."""
        trunk = h.detach()
        return {name: head(trunk).float() for name, head in self.aux.items() if name != "win"}

    def _aux_probabilities(self, h: torch.Tensor) -> dict[str, torch.Tensor]:
        logits = self._aux(h)
        probs = {"networth_rank": torch.softmax(logits["networth_rank"], dim=-1)}
        if "objectives" in logits:
            probs["objectives"] = torch.sigmoid(logits["objectives"])
        return probs

    # ----------------------------------------------------------------------------------------------- API

    @torch.no_grad()
    def act(
        self,
        obs: Obs,
        state: State,
        first: torch.Tensor,
        deterministic: bool = False,
        with_aux: bool = False,
    ) -> ActOutput:
        """One step for B agents: obs tensors [B, ...], ``first`` bool [B] (reset the state before this step).
        ``with_aux`` adds the net-worth rank and objective probabilities (what labels bootstrap from, paper D)."""
        h, units, state = self._trunk(obs, state, first.unsqueeze(0))
        h = h[0]
        actions, logprob, _, _ = self._policy(h, units, obs, None, deterministic, with_entropy=False)
        return ActOutput(
            actions=actions,
            logprob=logprob,
            value=self._value(h),
            win_prob=torch.sigmoid(self._win_logit(h)),
            state=state,
            aux=self._aux_probabilities(h) if with_aux else None,
        )

    def evaluate(self, obs: Obs, actions: torch.Tensor, state0: State, first: torch.Tensor) -> EvalOutput:
        """Score stored ``actions`` [T, B, 4] over a window: obs [T, B, ...], ``first`` [T, B], initial ``state0``."""
        t, b = first.shape
        h, units, state = self._trunk({k: v.flatten(0, 1) for k, v in obs.items()}, state0, first)
        flat_h = h.reshape(t * b, -1)
        masks = {k: obs[k].flatten(0, 1) for k in ("action_mask", "target_mask", "param_mask")}
        _, logprob, entropy, head_entropy = self._policy(
            flat_h, units, masks, actions.reshape(t * b, 4).long(), False
        )
        return EvalOutput(
            logprob=logprob.view(t, b),
            entropy=entropy.view(t, b),
            value=self._value(h),
            win_logit=self._win_logit(h),
            aux=self._aux(h),
            state=state,
            head_entropy={k: v.view(t, b) for k, v in head_entropy.items()},
        )

    def update_normalizers(self, obs: Obs) -> None:
        """Fold a training batch (any leading dims) into the observation statistics (learner only)."""
        self.encoder.update_normalizers(obs)
