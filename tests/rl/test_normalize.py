import numpy as np
import torch

from fivectl.rl.normalize import RewardScaler


def test_reward_scaler_uses_discounted_returns_reset_at_game_ends():
    gamma = 0.9
    rewards = torch.tensor([[1.0, 2.0], [1.0, -1.0], [1.0, 0.5], [1.0, 3.0]])
    dones = torch.tensor([[False, False], [True, False], [False, False], [False, True]])
    scaler = RewardScaler(num_agents=2)
    scaler.update(rewards[:2], dones[:2], gamma)  # two calls: the accumulators must carry over
    scaler.update(rewards[2:], dones[2:], gamma)
    # reference: ret = gamma * ret + r, recorded, then reset after a terminal step
    expected, ret = [], np.zeros(2)
    for t in range(4):
        ret = gamma * ret + rewards[t].numpy()
        expected.extend(ret.tolist())
        ret = np.where(dones[t].numpy(), 0.0, ret)
    assert scaler.return_stats.count.item() == 8
    np.testing.assert_allclose(scaler.return_stats.var.item(), np.var(expected), rtol=1e-9)
    np.testing.assert_allclose(scaler.returns.numpy(), ret, rtol=1e-12)
    scaled = scaler.scale(rewards)
    assert torch.allclose(scaled, rewards / np.sqrt(np.var(expected) + 1e-8))


def test_reward_scaler_state_is_plain_tensors_and_restores():
    scaler = RewardScaler(num_agents=3)
    scaler(torch.randn(6, 3), torch.zeros(6, 3, dtype=torch.bool), 0.99)
    state = scaler.state_dict()
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    restored = RewardScaler(num_agents=3)
    restored.load_state_dict(state)
    r = torch.randn(2, 3)
    assert torch.equal(restored.scale(r), scaler.scale(r))
    assert torch.equal(restored.returns, scaler.returns)
