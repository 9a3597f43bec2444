"""The auxiliary heads train in a real (serial) run: their losses reach the metrics."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.store.metrics import MetricsLog


def test_a_2v2_run_logs_finite_networth_rank_and_objective_losses(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    args = ["train", str(tiny_recipe), "--run", str(run), "--workers", "0", "--max-samples", "256"]
    result = CliRunner().invoke(app, [*args, "--set", "game.team_size=2", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["samples"] >= 256
    table = MetricsLog(run / "metrics").read()
    for column in ("aux_networth_rank", "aux_objectives", "aux_win"):
        values = table.column(column).to_pylist()
        assert values and all(v is not None and math.isfinite(v) for v in values), column
    # Two ranks per team: the cross-entropy of an untrained head is about log 2, far from 0.
    assert all(0.3 < v < 2.0 for v in table.column("aux_networth_rank").to_pylist())
