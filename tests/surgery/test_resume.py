"""Training on from an operated run: version numbers go on, and ``train.warmup_versions`` versions are trained at
learning rate 0 first (paper B, smooth restart) while the normalizers and Adam's moments settle."""

from __future__ import annotations

import json

import numpy as np
from surgery_helpers import invoke

from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog


def weights(store: CheckpointStore, version: int) -> dict[str, np.ndarray]:
    arrays = store.load(version, sections=("model",)).arrays["model"]
    return {k: v for k, v in arrays.items() if not k.startswith("encoder.norms.")}


def test_resume_after_surgery_runs_the_warm_period_then_learns(parent_run, tmp_path, schemas_dir):
    out = tmp_path / "obs"
    made = invoke("surgery", "add-obs", str(parent_run), "--schema", "9", "--out", str(out), "--calibrate-games", "1")
    assert made.exit_code == 0, made.output
    store = CheckpointStore(out / "checkpoints.zarr")
    operated = store.latest()
    result = invoke("train", "--run", str(out), "--resume", "--max-samples", "700", "--json",
                    "--set", "train.warmup_versions=2", "--set", "train.checkpoint_every=1")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["version"] >= operated + 3
    assert store.versions()[-1] > operated + 2 and operated + 1 in store.versions()
    start = weights(store, operated)
    for v in (operated + 1, operated + 2):  # learning rate 0: not one weight moved
        assert all(np.array_equal(start[k], w) for k, w in weights(store, v).items())
    moved = weights(store, operated + 3)
    assert any(not np.array_equal(start[k], w) for k, w in moved.items())
    # ... while the observation statistics and Adam's second moments kept learning
    first = store.load(operated + 2, sections=("model",))
    assert not np.array_equal(
        first.arrays["model"]["encoder.norms.self.mean"],
        store.load(operated, sections=("model",)).arrays["model"]["encoder.norms.self.mean"],
    )
    assert first.attrs["counters"]["warmup_end_version"] == operated + 2
    lr = MetricsLog(out / "metrics").read().to_pydict()
    rows = [r for r, i in zip(lr["lr"], lr["iteration"], strict=True) if i > first.attrs["counters"]["iteration"] - 2]
    assert rows[:2] == [0.0, 0.0] and rows[-1] > 0
