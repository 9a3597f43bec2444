"""Net-worth rank and team-objective labels and losses (paper D)."""

import math

import pytest
import torch

from fivectl.config.model import ModelConfig
from fivectl.config.train import TrainConfig
from fivectl.model import PolicyNet
from fivectl.model.synthetic import random_obs
from fivectl.rl.aux import (
    aux_losses,
    networth_rank_labels,
    networth_rank_loss,
    objective_labels,
    objectives_loss,
    team_ranks,
)
from fivectl.rl.bptt import join_windows
from fivectl.rl.learner import FragmentBatch, PPOLearner, concat_fragments
from fivectl.schema import load_schema


def test_team_ranks_order_each_team_by_networth_with_ties_to_the_lower_index():
    networth = torch.tensor([[3.0, 1.0, 2.0, 5.0, 5.0, 0.0]])
    assert team_ranks(networth, 3).tolist() == [[0, 2, 1, 0, 1, 2]]
    assert team_ranks(networth, 2).tolist() == [[0, 1, 1, 0, 0, 1]]


def test_networth_rank_labels_are_the_final_rank_or_the_prediction_after_the_fragment():
    # T = 4 steps, one team of 2 in column pairs (0, 1); its game ends after step 1.
    networth = torch.tensor([[5.0, 1.0], [2.0, 9.0], [4.0, 3.0], [1.0, 8.0]])
    dones = torch.tensor([[False, False], [True, True], [False, False], [False, False]])
    last = torch.tensor([[0.7, 0.3], [0.2, 0.8]])
    labels, valid = networth_rank_labels(networth, dones, last, team_size=2)
    final = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # at the game's last observation hero 1 is richer
    for t in (0, 1):
        torch.testing.assert_close(labels[t], final)
    for t in (2, 3):
        torch.testing.assert_close(labels[t], last)
    assert valid.all()
    _, valid = networth_rank_labels(networth, dones, None, team_size=2)
    assert valid.tolist() == [[True, True], [True, True], [False, False], [False, False]]


def test_objective_labels_discount_the_time_to_the_next_event_and_stop_at_game_end():
    gamma = 0.5
    # column 0: event at t=2 and the game ends after t=3; column 1: no event, no end (bootstraps from 0.8)
    events = torch.zeros(4, 2, 1, dtype=torch.bool)
    events[2, 0, 0] = True
    dones = torch.zeros(4, 2, dtype=torch.bool)
    dones[3, 0] = True
    last = torch.tensor([[0.9], [0.8]])
    labels, valid = objective_labels(events, dones, last, gamma)
    torch.testing.assert_close(labels[:, 0, 0], torch.tensor([0.25, 0.5, 1.0, 0.0]))
    torch.testing.assert_close(labels[:, 1, 0], torch.tensor([0.05, 0.1, 0.2, 0.4]))
    assert valid.all()
    _, valid = objective_labels(events, dones, None, gamma)
    assert valid[:, 0, 0].all() and not valid[:, 1, 0].any()


def reference_objective_labels(events, dones, last, gamma):
    """The recursion y_t = 1 if e_t, 0 if the game ended after t, else gamma * y_{t+1}; y_T = last."""
    labels = torch.empty(events.shape)
    label = last.clone()
    for t in reversed(range(events.shape[0])):
        label = torch.where(events[t], 1.0, torch.where(dones[t].unsqueeze(-1), 0.0, gamma * label))
        labels[t] = label
    return labels


def reference_rank_labels(networth, dones, last, team_size):
    labels = torch.empty(*networth.shape, team_size)
    label = last.clone()
    for t in reversed(range(networth.shape[0])):
        ranks = torch.nn.functional.one_hot(team_ranks(networth[t], team_size), team_size).float()
        label = torch.where(dones[t].unsqueeze(-1), ranks, label)
        labels[t] = label
    return labels


def test_labels_match_the_step_by_step_recursion_on_random_fragments():
    g = torch.Generator().manual_seed(4)
    steps, columns, n, team = 32, 6, 3, 3
    events = torch.rand(steps, columns, n, generator=g) < 0.1
    dones = (torch.rand(steps, columns // team, generator=g) < 0.1).repeat_interleave(team, dim=1)
    last = torch.rand(columns, n, generator=g)
    labels, _ = objective_labels(events, dones, last, 0.9)
    torch.testing.assert_close(labels, reference_objective_labels(events, dones, last, 0.9))
    networth = torch.rand(steps, columns, generator=g)
    last_rank = torch.softmax(torch.randn(columns, team, generator=g), -1)
    labels, _ = networth_rank_labels(networth, dones, last_rank, team)
    torch.testing.assert_close(labels, reference_rank_labels(networth, dones, last_rank, team))


def test_losses_on_hand_values():
    logits = torch.tensor([[0.0, math.log(3.0)], [5.0, 5.0]])  # softmax [0.25, 0.75], [0.5, 0.5]
    labels = torch.tensor([[0.0, 1.0], [0.4, 0.6]])
    weights = torch.tensor([1.0, 0.0])
    assert networth_rank_loss(logits, labels, weights).item() == pytest.approx(-math.log(0.75))
    assert networth_rank_loss(logits, labels, torch.ones(2)).item() == pytest.approx(
        (-math.log(0.75) + math.log(2.0)) / 2
    )
    p = torch.tensor([[0.75, 0.2]])
    y = torch.tensor([[1.0, 0.25]])
    bce = -(y * p.log() + (1 - y) * (1 - p).log())
    loss = objectives_loss(torch.logit(p), y, torch.tensor([[1.0, 1.0]]))
    assert loss.item() == pytest.approx(bce.mean().item(), rel=1e-6)
    assert objectives_loss(torch.logit(p), y, torch.tensor([[0.0, 1.0]])).item() == pytest.approx(
        bce[0, 1].item(), rel=1e-6
    )


TEAM, T, BPTT = 2, 8, 4
MODEL = ModelConfig(
    unit_embed=8, unit_hidden=8, cat_embed=4, grid_channels=2, fc_size=16, lstm_size=8, aux_hidden=8
)


def fragment(seed: int, columns: int = 2 * TEAM) -> FragmentBatch:
    """A fragment of synthetic observations with aux facts (one game end in column pair 0-1)."""
    schema = load_schema(1)
    g = torch.Generator().manual_seed(seed)
    obs = random_obs(schema, (T, columns), g)
    n = len(MODEL.aux_objectives)
    dones = torch.zeros(T, columns, dtype=torch.bool)
    dones[5, :TEAM] = True
    zeros = torch.zeros(T, columns)
    return FragmentBatch(
        obs=obs,
        actions=torch.zeros(T, columns, 4, dtype=torch.long),
        logprobs=zeros - 1.0,
        values=zeros,
        rewards=zeros,
        dones=dones,
        first=torch.zeros(T, columns, dtype=torch.bool),
        last_values=torch.zeros(columns),
        window_states=(torch.zeros(T // BPTT, 1, columns, 8), torch.zeros(T // BPTT, 1, columns, 8)),
        mask=torch.tensor([1.0, 1.0, 0.0, 0.0]).expand(T, columns),
        networth=torch.rand(T, columns, generator=g),
        objective_events=torch.rand(T, columns, n, generator=g) < 0.2,
        last_networth_rank=torch.full((columns, TEAM), 1 / TEAM),
        last_objectives=torch.full((columns, n), 0.3),
    )


def test_learner_windows_carry_the_labels_and_the_losses_train_only_the_aux_heads():
    schema = load_schema(1)
    torch.manual_seed(0)
    net = PolicyNet(schema, MODEL, TEAM)
    learner = PPOLearner(
        net, TrainConfig(bptt=BPTT), team_size=TEAM, aux_loss_fn=aux_losses, objective_gamma=0.9
    )
    batch = concat_fragments([fragment(1), fragment(2)])
    windows = learner.prepare_windows(batch, gamma=0.99)
    targets = windows.aux_targets
    labels, _ = objective_labels(batch.objective_events, batch.dones, batch.last_objectives, 0.9)
    torch.testing.assert_close(join_windows(targets["objectives"], batch.columns), labels)
    ranks, _ = networth_rank_labels(batch.networth, batch.dones, batch.last_networth_rank, TEAM)
    torch.testing.assert_close(join_windows(targets["networth_rank"], batch.columns), ranks)
    # Only the learner's side (mask) counts.
    assert join_windows(targets["networth_rank_weight"], batch.columns)[:, 2:4].sum() == 0

    evaluation = net.evaluate(windows.obs, windows.actions, windows.states, windows.first)
    losses = aux_losses(evaluation, windows)
    assert set(losses) == {"networth_rank", "objectives"}
    assert all(torch.isfinite(v) and v > 0 for v in losses.values())
    net.zero_grad(set_to_none=True)
    sum(losses.values()).backward()
    trained = {name for name, p in net.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert trained and all(name.startswith(("aux.networth_rank.", "aux.objectives.")) for name in trained)

    parts = learner.gradient_step(windows, entropy_coef=0.0)
    assert math.isfinite(parts["aux_networth_rank"]) and math.isfinite(parts["aux_objectives"])


def test_gradient_step_reports_each_action_heads_share_of_the_entropy():
    torch.manual_seed(0)
    net = PolicyNet(load_schema(1), MODEL, TEAM)
    learner = PPOLearner(
        net, TrainConfig(bptt=BPTT), team_size=TEAM, aux_loss_fn=aux_losses, objective_gamma=0.9
    )
    windows = learner.prepare_windows(concat_fragments([fragment(1), fragment(2)]), gamma=0.99)
    parts = learner.gradient_step(windows, entropy_coef=0.0)
    heads = {k: v for k, v in parts.items() if k.startswith("entropy_")}
    assert set(heads) == {"entropy_primary", "entropy_delay", "entropy_target", "entropy_offset"}
    # The delay head is used on every step and starts near uniform over its choices.
    assert 0.5 * math.log(4) < heads["entropy_delay"] <= math.log(4) + 1e-6
    assert sum(heads.values()) == pytest.approx(parts["entropy"], rel=1e-5)
