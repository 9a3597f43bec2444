"""Run directories and their stores: Zarr checkpoints, Arrow rollouts and metrics. Every write is atomic."""
