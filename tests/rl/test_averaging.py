"""The moving average of the weights: its arithmetic, its buffers, its checkpoint arrays."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from fivectl.rl.averaging import WeightAverage


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(3, 2)
        self.register_buffer("running_mean", torch.zeros(3))


def set_weights(net: Net, value: float) -> None:
    with torch.no_grad():
        net.layer.weight.fill_(value)
        net.layer.bias.fill_(value)


def test_each_update_moves_the_average_by_one_minus_exp_of_samples_over_horizon():
    net = Net()
    set_weights(net, 0.0)
    average = WeightAverage(net, horizon_samples=1000)
    set_weights(net, 1.0)
    average.update(net, samples_trained=100, samples_so_far=5000)
    alpha = 1 - math.exp(-100 / 1000)
    assert torch.allclose(average.weights["layer.weight"], torch.full((2, 3), alpha))
    average.update(net, samples_trained=100, samples_so_far=5100)
    assert torch.allclose(average.weights["layer.bias"], torch.full((2,), 1 - (1 - alpha) ** 2))
    # the trained network is untouched
    assert torch.equal(net.layer.weight, torch.ones(2, 3))


def test_early_updates_use_the_samples_so_far_as_horizon_and_buffers_are_copied():
    net = Net()
    set_weights(net, 0.0)
    average = WeightAverage(net, horizon_samples=1_000_000)
    set_weights(net, 1.0)
    net.running_mean.fill_(7.0)
    average.update(net, samples_trained=100, samples_so_far=100)  # the first iteration: e^-1 of the start left
    assert torch.allclose(average.weights["layer.weight"], torch.full((2, 3), 1 - math.exp(-1)))
    assert torch.equal(average.weights["running_mean"], torch.full((3,), 7.0))


def test_arrays_round_trip_and_reset():
    net = Net()
    average = WeightAverage(net, horizon_samples=10)
    set_weights(net, 2.0)
    average.update(net, 5, 50)
    other = WeightAverage(Net(), horizon_samples=10)
    other.load_arrays(average.arrays())
    assert all(torch.equal(other.weights[k], v) for k, v in average.weights.items())
    other.reset(net)
    assert torch.equal(other.weights["layer.weight"], net.layer.weight)
    with pytest.raises(ValueError):
        WeightAverage(net, 0)
