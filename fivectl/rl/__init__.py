"""PPO math: GAE, the clipped objective, normalizers, the optimizer, schedules, BPTT windows, the learner."""
