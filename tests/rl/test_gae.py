import math

import numpy as np
import pytest
import torch

from fivectl.errors import BadInput
from fivectl.rl.gae import bootstrapped_labels, compute_gae, gamma_from_horizon


def reference_gae(rewards, values, dones, last_values, gamma, lam):
    """Forward-sum definition, one column and one step at a time:
    A_t = sum_l (gamma lam)^l delta_{t+l}, stopping after the step that ends the game or at the fragment end."""
    steps, columns = rewards.shape
    advantages = np.zeros((steps, columns))
    for b in range(columns):
        for t in range(steps):
            total, discount = 0.0, 1.0
            for u in range(t, steps):
                next_value = last_values[b] if u == steps - 1 else values[u + 1, b]
                bootstrap = 0.0 if dones[u, b] else gamma * next_value
                total += discount * (rewards[u, b] + bootstrap - values[u, b])
                if dones[u, b]:
                    break
                discount *= gamma * lam
            advantages[t, b] = total
    return advantages, advantages + values


@pytest.mark.parametrize("lam", [0.0, 0.95, 1.0])
def test_matches_reference_on_random_fragments_with_game_ends(lam):
    rng = np.random.default_rng(1)
    steps, columns, gamma = 40, 7, 0.98
    rewards = rng.normal(size=(steps, columns))
    values = rng.normal(size=(steps, columns))
    dones = rng.random((steps, columns)) < 0.1
    dones[-1, 0] = True  # a game ending exactly at the fragment end: no bootstrap from last_values
    dones[:, 1] = False  # a column with no game end: bootstraps from last_values through the whole fragment
    last_values = rng.normal(size=columns)
    expected_adv, expected_ret = reference_gae(rewards, values, dones, last_values, gamma, lam)

    as_tensors = [torch.from_numpy(a) for a in (rewards, values, dones, last_values)]
    advantages, returns = compute_gae(*as_tensors, gamma, lam)
    np.testing.assert_allclose(advantages.numpy(), expected_adv, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(returns.numpy(), expected_ret, rtol=1e-10, atol=1e-10)


def test_lambda_one_gives_discounted_returns_with_and_without_bootstrap():
    gamma = 0.5
    rewards = torch.tensor([[1.0, 1.0], [2.0, 2.0], [4.0, 4.0]])
    values = torch.tensor([[9.0, 9.0], [9.0, 9.0], [9.0, 9.0]])  # irrelevant to lambda=1 returns
    dones = torch.tensor([[False, False], [False, True], [False, False]])
    last_values = torch.tensor([8.0, 8.0])
    _, returns = compute_gae(rewards, values, dones, last_values, gamma, lam=1.0)
    # column 0: one game through the fragment end -> 1 + .5*2 + .25*4 + .125*8
    assert returns[:, 0].tolist() == [4.0, 6.0, 8.0]
    # column 1: the game ends after step 1 (no bootstrap from step 2), a new game starts at step 2
    assert returns[:, 1].tolist() == [2.0, 2.0, 8.0]


def test_shape_errors_are_bad_input():
    rewards, dones = torch.zeros(4, 2), torch.zeros(4, 2, dtype=torch.bool)
    with pytest.raises(BadInput):
        compute_gae(rewards, torch.zeros(4, 3), dones, torch.zeros(2), 0.9, 0.9)
    with pytest.raises(BadInput):
        compute_gae(rewards, torch.zeros(4, 2), dones, torch.zeros(4), 0.9, 0.9)


def test_gamma_from_horizon_follows_the_paper():
    assert math.isclose(gamma_from_horizon(180.0), 1 - (4 / 30) / 180.0)
    assert math.isclose(gamma_from_horizon(6.0, step_s=0.133), 1 - 0.133 / 6.0)
    # the horizon 1/(1-gamma) in steps times the step length is the horizon in seconds
    assert math.isclose((4 / 30) / (1 - gamma_from_horizon(60.0)), 60.0)
    with pytest.raises(BadInput):
        gamma_from_horizon(0.0)
    with pytest.raises(BadInput):
        gamma_from_horizon(0.1)  # shorter than one step


def test_win_labels_use_the_next_outcome_else_the_bootstrap_prediction():
    dones = torch.tensor([[False, False], [True, False], [False, False], [False, True]])
    outcomes = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.5]])
    labels, valid = bootstrapped_labels(outcomes, dones, torch.tensor([0.25, 0.75]))
    assert labels[:, 0].tolist() == [1.0, 1.0, 0.25, 0.25]
    assert labels[:, 1].tolist() == [0.5, 0.5, 0.5, 0.5]
    assert valid.all()
    labels, valid = bootstrapped_labels(outcomes, dones, None)
    assert valid[:, 0].tolist() == [True, True, False, False]
    assert valid[:, 1].all() and labels[0, 0] == 1.0
