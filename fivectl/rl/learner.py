"""One PPO learner iteration on a batch of rollout fragments (paper §4 and C; structure of CleanRL's ppo.py).

    fragments [T, B] --GAE per fragment--> advantages, returns      (gae.py; bootstrap with last_values)
              --cut into 16-step windows--> [16, (T/16) * B]         (bptt.py; stored LSTM state per window)
              --epochs x minibatches of whole teams--> gradient steps on the PPO loss (ppo.py, optim.py)

The model is anything with ``evaluate(obs, actions, state0, first)`` returning an object with attributes
``logprob, entropy, value, win_logit, aux`` (ARCHITECTURE.md ``EvalOutput``) or that 5-tuple; ``win_logit`` may
be None. If it has ``update_normalizers(obs)``, the learner calls it on the batch after the gradient steps, so the
importance ratios of this batch are computed with the normalization the workers used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

import torch
from torch import nn

from fivectl.config.train import TrainConfig
from fivectl.errors import BadInput
from fivectl.rl.aux import aux_targets
from fivectl.rl.bptt import (
    map_tensors,
    num_windows,
    select_columns,
    split_windows,
    team_minibatches,
    window_states,
)
from fivectl.rl.data_parallel import DataParallel
from fivectl.rl.gae import bootstrapped_labels, compute_gae
from fivectl.rl.optim import ClippedAdam
from fivectl.rl.ppo import normalize_advantages, ppo_loss_tensors, tensors_to_floats
from fivectl.rl.schedules import Hyperparameters

# ``train_iteration``'s default: update the observation normalizers with the batch's own observations.
SAME_BATCH = object()


@dataclass
class FragmentBatch:
    """Rollout fragments as the learner consumes them: B columns (agents) of T steps, time-major.

    ``window_states`` is the model's recurrent state at the start of each BPTT window, a tree of tensors
    [T // bptt, *state_shape] (for an LSTM (h, c), each [T // bptt, num_layers, B, H]); workers record it while
    playing. ``outcomes`` (1 win, 0 loss, 0.5 draw) is read where ``dones`` is True and, with ``last_win_probs``
    (the win probability predicted for the observation after the fragment), labels the win-probability head.
    ``networth`` [T, B] (each hero's net worth at step t), ``objective_events`` bool [T, B, n] (it helped destroy
    objective j during step t) and the predictions after the fragment ``last_networth_rank`` [B, team_size] and
    ``last_objectives`` [B, n] label the other auxiliary heads (``fivectl.rl.aux``).
    ``mask`` (bool or float weights) marks the samples that count; padding gets 0.
    """

    obs: Any
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    first: torch.Tensor
    last_values: torch.Tensor
    window_states: Any
    outcomes: torch.Tensor | None = None
    last_win_probs: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    networth: torch.Tensor | None = None
    objective_events: torch.Tensor | None = None
    last_networth_rank: torch.Tensor | None = None
    last_objectives: torch.Tensor | None = None

    @property
    def steps(self) -> int:
        return self.rewards.shape[0]

    @property
    def columns(self) -> int:
        return self.rewards.shape[1]


def concat_fragments(batches: list[FragmentBatch], state_batch_dim: int = 1) -> FragmentBatch:
    """Fragments of equal length side by side (columns of batch i follow those of batch i-1)."""
    if not batches:
        raise BadInput("no fragments to concatenate")

    def cat(values: list, dim: int) -> Any:
        if any(v is None for v in values):
            if all(v is None for v in values):
                return None
            raise BadInput(
                "some fragments have an optional field (outcomes, last_win_probs, networth, ...) that others lack"
            )
        if isinstance(values[0], torch.Tensor):
            return torch.cat(values, dim=dim)
        if isinstance(values[0], dict):
            return {key: cat([v[key] for v in values], dim) for key in values[0]}
        if isinstance(values[0], list | tuple):
            return type(values[0])(cat(list(parts), dim) for parts in zip(*values, strict=True))
        raise BadInput(f"cannot concatenate fragment field of type {type(values[0]).__name__}")

    if any(b.mask is not None for b in batches):
        batches = [b if b.mask is not None else replace(b, mask=torch.ones_like(b.rewards)) for b in batches]
    merged = {}
    for f in fields(FragmentBatch):
        values = [getattr(b, f.name) for b in batches]
        if f.name in ("last_values", "last_win_probs", "last_networth_rank", "last_objectives"):
            merged[f.name] = cat(values, 0)
        elif f.name == "window_states":
            merged[f.name] = cat(values, 1 + state_batch_dim)
        else:
            merged[f.name] = cat(values, 1)
    return FragmentBatch(**merged)


def keep_trained_teams(batch: FragmentBatch, team_size: int, state_batch_dim: int = 1) -> FragmentBatch:
    """The batch without the teams whose ``mask`` is 0 on every step: the side a past version or a scripted bot
    played. Their samples weigh nothing in the loss, but a forward and backward pass over them still costs as
    much as over trained ones (a part of the learner's time that grows with the share of games against bots).
    Columns are independent (GAE and the recurrent state run per column), so dropping whole teams changes
    nothing else. Returns ``batch`` itself when every team trains."""
    if batch.mask is None:
        return batch
    if batch.columns % team_size != 0:
        raise BadInput(f"{batch.columns} fragment columns do not split into teams of {team_size}")
    trained_team = (batch.mask > 0).reshape(batch.steps, -1, team_size).any(dim=0).any(dim=1)  # [teams]
    if bool(trained_team.all()):
        return batch
    columns = torch.repeat_interleave(trained_team, team_size).nonzero().squeeze(1)
    return select_batch_columns(batch, columns, state_batch_dim)


def select_batch_columns(batch: FragmentBatch, columns: torch.Tensor, state_batch_dim: int = 1) -> FragmentBatch:
    """The fragment columns ``columns`` of every field of the batch."""
    kept = {}
    for f in fields(FragmentBatch):
        value = getattr(batch, f.name)
        if f.name in ("last_values", "last_win_probs", "last_networth_rank", "last_objectives"):
            dim = 0
        elif f.name == "window_states":
            dim = 1 + state_batch_dim
        else:
            dim = 1
        kept[f.name] = None if value is None else select_columns(value, columns, dim=dim)
    return FragmentBatch(**kept)


@dataclass
class Windows:
    """The batch cut into BPTT windows: tensors [bptt, N, ...] with N = (T / bptt) * B columns."""

    obs: Any
    actions: torch.Tensor
    old_logprobs: torch.Tensor
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    first: torch.Tensor
    weights: torch.Tensor
    win_labels: torch.Tensor
    win_weights: torch.Tensor
    states: Any
    # fivectl.rl.aux.aux_targets cut into windows: "networth_rank" [bptt, N, k], "objectives" [bptt, N, n] and
    # their "<name>_weight"s
    aux_targets: dict[str, torch.Tensor] = field(default_factory=dict)

    def select(self, columns: torch.Tensor, state_batch_dim: int) -> Windows:
        per_step = {
            f.name: select_columns(getattr(self, f.name), columns) for f in fields(self) if f.name != "states"
        }
        return Windows(**per_step, states=select_columns(self.states, columns, dim=state_batch_dim))


AuxLossFn = Callable[[Any, Windows], dict[str, torch.Tensor]]


def _unpack(evaluation: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, dict]:
    if hasattr(evaluation, "logprob"):
        return evaluation.logprob, evaluation.entropy, evaluation.value, evaluation.win_logit, evaluation.aux
    logprob, entropy, value, win_logit, aux = evaluation
    return logprob, entropy, value, win_logit, aux


class PPOLearner:
    """Owns the optimizer; :meth:`train_iteration` runs epochs x minibatches gradient steps on one batch.

    ``team_size``: teammates are contiguous columns (ARCHITECTURE.md) and minibatches keep teams whole.
    ``state_batch_dim``: the batch dimension of the model's state tensors (1 for an LSTM's (h, c)).
    ``aux_loss_fn(evaluation, minibatch) -> {name: loss}``: extra auxiliary losses (net-worth rank, team
    objectives: ``fivectl.rl.aux.aux_losses``), weighted by ``train.aux_loss_weight`` like the win-probability
    loss; their labels (``Windows.aux_targets``) come from the batch's aux facts, the objectives' discounted by
    ``objective_gamma`` per step (paper D: a 2-minute horizon).
    ``data_parallel``: this learner is one rank of several, each with a share of the batch; losses, advantage
    normalization and gradients are combined over the ranks (``fivectl.rl.data_parallel``).
    """

    def __init__(
        self,
        model: nn.Module,
        train: TrainConfig,
        *,
        team_size: int = 1,
        state_batch_dim: int = 1,
        aux_loss_fn: AuxLossFn | None = None,
        objective_gamma: float | None = None,
        generator: torch.Generator | None = None,
        data_parallel: DataParallel | None = None,
    ):
        self.model = model
        self.data_parallel = data_parallel
        self.train = train
        self.team_size = team_size
        self.state_batch_dim = state_batch_dim
        self.aux_loss_fn = aux_loss_fn
        self.objective_gamma = objective_gamma
        self.generator = generator
        self.optimizer = ClippedAdam(
            model.parameters(),
            lr=train.learning_rate.start,
            betas=(train.adam_beta1, train.adam_beta2),
            eps=train.adam_eps,
            clip_sigmas=train.grad_clip_sigmas,
        )
        self.gradient_steps = 0

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # ---- the iteration ------------------------------------------------------------------------------------------

    def train_iteration(
        self, batch: FragmentBatch, hp: Hyperparameters, normalizer_obs: Any = SAME_BATCH
    ) -> dict[str, float]:
        """Advantages, windows, then ``epochs`` passes of ``minibatches`` gradient steps. Returns metrics:
        the loss parts averaged over the gradient steps, plus the settings and batch statistics used.
        ``normalizer_obs``: what the observation normalizers are updated with afterwards (the batch's own
        observations by default; the union of the shares with data parallelism; None: no update).

        The parts stay device tensors until the end of the iteration and are read in one transfer: on a GPU,
        a ``float()`` per part and per step would stall the device every step."""
        batch = map_tensors(lambda x: to_device(x, self.device), batch)
        windows = self.prepare_windows(batch, hp.gamma)
        for group in self.optimizer.param_groups:
            group["lr"] = hp.learning_rate

        self.model.train()
        sums: dict[str, torch.Tensor] = {}
        counts: dict[str, torch.Tensor] = {}  # a part can be missing from a step (no win label in that minibatch)
        for _ in range(self.train.epochs):
            for columns in team_minibatches(
                windows.advantages.shape[1], self.team_size, self.train.minibatches, self.generator
            ):
                columns = to_device(columns, self.device)
                mb = windows.select(columns, self.state_batch_dim)
                parts, present = self.gradient_step_tensors(mb, hp.entropy_coef, value_only=hp.value_only)
                for name, value in parts.items():
                    weight = present.get(name)
                    if weight is None:  # on the value's device: a CPU tensor would not stack with GPU ones
                        weight = torch.ones((), device=value.device)
                    sums[name] = sums[name] + value * weight if name in sums else value * weight
                    counts[name] = counts[name] + weight if name in counts else weight

        update_normalizers = getattr(self.model, "update_normalizers", None)
        if normalizer_obs is SAME_BATCH:
            normalizer_obs = batch.obs
        if update_normalizers is not None and normalizer_obs is not None:
            update_normalizers(map_tensors(lambda x: to_device(x, self.device), normalizer_obs))

        statistics = {
            "samples": windows.weights.sum(),
            "advantage_mean": _weighted_mean(windows.advantages, windows.weights),
            "return_mean": _weighted_mean(windows.returns, windows.weights),
        }
        values = tensors_to_floats(
            {**{f"sum.{k}": v for k, v in sums.items()}, **{f"count.{k}": v for k, v in counts.items()}, **statistics}
        )
        metrics = {
            name: values[f"sum.{name}"] / values[f"count.{name}"] for name in sums if values[f"count.{name}"] > 0
        }
        metrics.update(
            learning_rate=hp.learning_rate,
            entropy_coef=hp.entropy_coef,
            gamma=hp.gamma,
            gradient_steps=float(self.gradient_steps),
            **{name: values[name] for name in statistics},
        )
        return metrics

    def prepare_windows(self, batch: FragmentBatch, gamma: float) -> Windows:
        """GAE on whole fragments (so returns bootstrap only at the fragment end), then 16-step windows."""
        bptt = self.train.bptt
        self._check_batch(batch)

        # ---- advantages and value targets, per fragment (paper C: GAE lambda) ----
        rewards, values, last_values = batch.rewards.float(), batch.values.float(), batch.last_values.float()
        advantages, returns = compute_gae(
            rewards, values, batch.dones, last_values, gamma, self.train.gae_lambda
        )
        weights = torch.ones_like(advantages) if batch.mask is None else batch.mask.to(advantages.dtype)

        # ---- win-probability labels: the outcome, or the prediction at the fragment end (paper D) ----
        if batch.outcomes is not None:
            win_labels, valid = bootstrapped_labels(batch.outcomes, batch.dones, batch.last_win_probs)
            win_weights = weights * valid.to(weights.dtype)
        else:
            win_labels, win_weights = torch.zeros_like(advantages), torch.zeros_like(advantages)
        # ---- net-worth rank and team-objective labels (paper D), same bootstrapping ----
        targets = aux_targets(batch, self.team_size, self.objective_gamma, weights)

        def cut(x: torch.Tensor) -> torch.Tensor:
            return split_windows(x, bptt)

        return Windows(
            obs=map_tensors(cut, batch.obs),
            actions=cut(batch.actions),
            old_logprobs=cut(batch.logprobs.float()),
            old_values=cut(batch.values.float()),
            advantages=cut(advantages),
            returns=cut(returns),
            first=cut(batch.first.to(torch.bool)),
            weights=cut(weights),
            win_labels=cut(win_labels),
            win_weights=cut(win_weights),
            states=window_states(batch.window_states, self.state_batch_dim),
            aux_targets={name: cut(x) for name, x in targets.items()},
        )

    def _check_batch(self, batch: FragmentBatch) -> None:
        num_windows(batch.steps, self.train.bptt)  # raises unless T is a multiple of the window
        if batch.columns % self.team_size != 0:
            raise BadInput(f"{batch.columns} fragment columns do not split into teams of {self.team_size}")
        if batch.first.shape != batch.rewards.shape or batch.logprobs.shape != batch.rewards.shape:
            raise BadInput(
                f"first {tuple(batch.first.shape)} and logprobs {tuple(batch.logprobs.shape)} must match "
                f"rewards {tuple(batch.rewards.shape)}"
            )

    def gradient_step(self, mb: Windows, entropy_coef: float, value_only: bool = False) -> dict[str, float]:
        """One optimizer step on a minibatch of windows (truncated BPTT from the stored states); its parts as
        floats (the parts a step lacks, e.g. no win label in the minibatch, are left out)."""
        parts, present = self.gradient_step_tensors(mb, entropy_coef, value_only=value_only)
        values = tensors_to_floats({**parts, **{f"present.{k}": v for k, v in present.items()}})
        return {k: values[k] for k in parts if values.get(f"present.{k}", 1.0) > 0}

    def gradient_step_tensors(
        self, mb: Windows, entropy_coef: float, value_only: bool = False
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """:meth:`gradient_step` without host synchronisation: (parts as 0-d device tensors, {part: 1.0 if
        the step has it else 0.0} for the parts that may be missing). ``value_only``: the step changes the value
        head alone (``train.value_warmup_samples``)."""
        # The model returns float32 log-probabilities, values and logits under bfloat16 autocast too (policy.py).
        with torch.autocast(
            self.device.type, dtype=torch.bfloat16, enabled=self.train.precision == "bfloat16"
        ):
            evaluation = self.model.evaluate(mb.obs, mb.actions, mb.states, mb.first)
        logprob, entropy, value, win_logit, _ = _unpack(evaluation)

        dp = self.data_parallel
        advantages = mb.advantages
        if self.train.normalize_advantages:
            advantages = (
                dp.normalize_advantages(advantages, mb.weights)
                if dp is not None
                else normalize_advantages(advantages, mb.weights)
            )
        aux_losses = self.aux_loss_fn(evaluation, mb) if self.aux_loss_fn is not None else None
        # A minibatch without win labels weighs the win loss 0 (weighted_mean of no samples is 0, and so is its
        # gradient); ``present`` marks it so the iteration's average leaves that step out.
        present = {}
        if win_logit is not None:
            present["aux_win"] = (mb.win_weights.sum() > 0).to(torch.float32)

        loss, parts = ppo_loss_tensors(
            logprob=logprob,
            old_logprob=mb.old_logprobs,
            advantages=advantages,
            entropy=entropy,
            values=value,
            old_values=mb.old_values,
            returns=mb.returns,
            clip=self.train.clip,
            dual_clip=self.train.dual_clip,
            value_clip=self.train.value_clip,
            value_loss_weight=self.train.value_loss_weight,
            entropy_coef=entropy_coef,
            weights=mb.weights,
            win_logit=win_logit,
            win_labels=mb.win_labels if win_logit is not None else None,
            win_weights=mb.win_weights,
            aux_losses=aux_losses,
            aux_loss_weight=self.train.aux_loss_weight,
        )

        if dp is not None:
            loss = loss * dp.sample_share(mb.weights)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if dp is not None:
            dp.sum_gradients(list(self.model.parameters()))
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        parts["grad_norm"] = (
            torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
            if grads
            else torch.zeros((), device=loss.device)
        )
        if value_only:
            self.keep_only_value_gradients()
        self.optimizer.step()
        parts["optimizer_clip_fraction"] = self.optimizer.last_clip_fraction_tensor
        parts.update(_head_entropies(evaluation, mb.weights))
        self.gradient_steps += 1
        return parts, present

    def keep_only_value_gradients(self) -> None:
        """Drop every gradient but the value head's: the optimizer steps only parameters that have one, so the
        policy, the trunk (which the value loss would otherwise move) and their Adam moments stay as they are."""
        value_params = {id(p) for p in self.model.value_parameters()}
        for p in self.model.parameters():
            if id(p) not in value_params:
                p.grad = None

    # ---- checkpoint state (tensors and plain values only) -------------------------------------------------------

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "gradient_steps": self.gradient_steps}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.gradient_steps = int(state["gradient_steps"])


def _head_entropies(evaluation: Any, weights: torch.Tensor) -> dict[str, torch.Tensor]:
    """``entropy_<head>``: each action head's share of the entropy (a head the chosen primary does not use counts
    0), so they add up to ``entropy``. A head stuck near its maximum (log 81 for the offset) learns nothing."""
    head_entropy = getattr(evaluation, "head_entropy", None) or {}
    return {f"entropy_{name}": _weighted_mean(h.detach(), weights) for name, h in head_entropy.items()}


def to_device(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``x`` on ``device``. Host -> GPU copies go through pinned (page-locked) memory with ``non_blocking``, so
    the copy runs asynchronously on the device's stream instead of a staged, blocking one; on the CPU the
    tensor is returned as is (no copy)."""
    if x.device == device:
        return x
    if device.type == "cuda" and x.device.type == "cpu":
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)


def _weighted_mean(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return (x * weights).sum() / weights.sum().clamp_min(1e-8)
