"""``fivectl runs list|show|plot`` over a fake run: RunDir + saved checkpoints + metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from shared_helpers import assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.runs import app
from fivectl.config import load_recipe
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog
from fivectl.store.rundir import RunDir

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def make_run(path: Path, versions: tuple[int, ...] = (10, 20), iterations: int = 20) -> RunDir:
    run = RunDir.create(path, load_recipe(REPO / "recipes" / "quickstart.toml"))
    store = CheckpointStore(run.checkpoints_path)
    for v in versions:
        store.save(v, {"model": {"w": np.full(8, v, np.float32)}}, {"iteration": v, "samples": 1000 * v})
    MetricsLog(run.metrics_path).append(
        [
            {
                "iteration": i,
                "version": i,
                "samples": 1000 * i,
                "wall_seconds": 30.0 * i,
                "samples_per_s": 500.0 + i,
                "staleness_mean": 0.5,
                "sample_reuse": 1.25,
                "policy_loss": 1.0 / i,
                "value_loss": 2.0 / i,
                "entropy": 3.0 - 0.01 * i,
                "explained_variance": float("nan") if i == iterations else 0.1,
                "win_rate": 0.5,
            }
            for i in range(1, iterations + 1)
        ]
    )
    return run


def test_show_json_has_the_contract_keys(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    result = runner.invoke(app, ["show", str(run.path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["latest_version"] == 20 and data["versions"] == [10, 20]
    assert data["samples"] == 20_000 and data["samples_per_s"] == 520.0 and data["iterations"] == 20
    assert data["staleness_mean"] == 0.5 and data["sample_reuse"] == 1.25
    assert data["latest_metrics"]["explained_variance"] is None  # NaN is not JSON
    assert [c["iteration"] for c in data["checkpoints"]] == [10, 20]


def test_show_table(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    result = runner.invoke(app, ["show", str(run.path)])
    assert result.exit_code == 0, result.output
    for text in ("latest version", "20,000", "policy_loss", "checkpoints", "KiB"):
        assert text in result.stdout


def test_show_summarises_many_checkpoints_and_json_keeps_every_one(tmp_path: Path) -> None:
    # a long run: retention leaves milestones (quickstart: every 100) far apart and the newest close together
    versions = (100, 200, 300, 310, 312, 314, 316, 318)
    run = make_run(tmp_path / "run", versions=())
    store = CheckpointStore(run.checkpoints_path)
    for v in versions:
        store.save(
            v, {"model": {"w": np.ones(8, np.float32)}, "optimizer": {"m": np.ones(8)}}, {"iteration": v}
        )
    store.slim(310)  # a past version kept for the opponent pool
    text = runner.invoke(app, ["show", str(run.path)])
    assert text.exit_code == 0, text.output
    out = text.stdout
    assert "v100-v318" in out and "2-100 versions apart (median 2)" in out
    assert "v100, v200, v300" in out and "1 (opponent-pool members)" in out
    assert "newest 3 checkpoint(s)" in out
    listed = [line.split()[1] for line in out.splitlines() if line.startswith("│ 3")]
    assert listed == ["314", "316", "318"]  # only the newest, one by one: not v100 ... v312
    data = json.loads(runner.invoke(app, ["show", str(run.path), "--json"]).stdout)
    assert [c["version"] for c in data["checkpoints"]] == list(versions)  # the full list stays in --json
    summary = data["checkpoint_summary"]
    assert (summary["count"], summary["first"], summary["last"]) == (8, 100, 318)
    assert summary["spacing"] == {"min": 2, "median": 2.0, "max": 100}
    assert summary["milestones"] == [100, 200, 300] and summary["model_only"] == 1


def test_show_spacing_of_evenly_spaced_checkpoints(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", versions=(10, 20, 30))
    out = runner.invoke(app, ["show", str(run.path)]).stdout
    assert "every 10 versions" in out and "v10-v30" in out


def test_show_tells_slimmed_pool_checkpoints_apart(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", versions=())
    store = CheckpointStore(run.checkpoints_path)
    for v in (10, 20):
        store.save(
            v,
            {"model": {"w": np.ones(8, np.float32)}, "optimizer": {"m": np.ones(8)}},
            {"counters": {"iteration": v, "samples": 100 * v}},
        )
    store.slim(10)
    data = json.loads(runner.invoke(app, ["show", str(run.path), "--json"]).stdout)
    assert [c["model_only"] for c in data["checkpoints"]] == [True, False]
    assert [(c["iteration"], c["samples"]) for c in data["checkpoints"]] == [(10, 1000), (20, 2000)]
    table = runner.invoke(app, ["show", str(run.path)]).stdout
    assert "model only" in table and "whole" in table


def test_show_a_run_without_checkpoints_says_none(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", versions=(), iterations=0)
    result = runner.invoke(app, ["show", str(run.path)])
    assert result.exit_code == 0, result.output
    assert "checkpoints: none yet" in result.stdout and "metrics: none yet" in result.stdout
    data = json.loads(runner.invoke(app, ["show", str(run.path), "--json"]).stdout)
    assert data["latest_version"] is None and data["versions"] == [] and data["iterations"] == 0


def test_show_marks_an_unreadable_checkpoint(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    (run.checkpoints_path / "v00000020" / "zarr.json").write_text("{trunc")
    data = json.loads(runner.invoke(app, ["show", str(run.path), "--json"]).stdout)
    assert data["checkpoints"][-1]["readable"] is False


@pytest.mark.parametrize("command", ["show", "plot"])
def test_not_a_run_is_a_one_line_error_exit_2(tmp_path: Path, command: str) -> None:
    result = runner.invoke(app, [command, str(tmp_path)])
    assert result.exit_code == 2
    assert "not a fivectl run" in result.output and len(result.output.strip().splitlines()) == 1


def test_plot_writes_a_png(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    out = tmp_path / "curves.png"
    result = runner.invoke(app, ["plot", str(run.path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    default = runner.invoke(app, ["plot", str(run.path)])
    assert default.exit_code == 0 and (run.logs_path / "learning_curves.png").is_file()


def plotted_axes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[float]]]:
    """(x label, x data) of every visible panel of each figure saved from now on."""
    from matplotlib.figure import Figure

    seen: list[tuple[str, list[float]]] = []
    save = Figure.savefig

    def recording_save(fig, *args, **kwargs):
        for ax in fig.axes:
            if ax.get_visible():
                seen.append((ax.get_xlabel(), list(ax.lines[0].get_xdata())))
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording_save)
    return seen


@pytest.mark.parametrize(
    ("option", "label", "per_row"),
    [((), "samples", 1000.0), (("--x", "samples"), "samples", 1000.0), (("--x", "minutes"), "minutes", 0.5)],
)
def test_plot_x_axis_is_samples_by_default_or_minutes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: tuple[str, ...], label: str, per_row: float
) -> None:
    run = make_run(tmp_path / "run")  # row i: 1000 * i samples, 30 * i seconds
    seen = plotted_axes(monkeypatch)
    result = runner.invoke(app, ["plot", str(run.path), "--out", str(tmp_path / "c.png"), *option])
    assert result.exit_code == 0, result.output
    assert seen and all(label in xlabel for xlabel, _ in seen)
    for _, xs in seen:
        assert xs == pytest.approx([per_row * i for i in range(1, 21)])


def test_plot_bad_x_axis_or_no_wall_clock_is_exit_2(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    bad = runner.invoke(app, ["plot", str(run.path), "--x", "hours"])
    assert bad.exit_code == 2 and "samples, minutes" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
    bare = make_run(tmp_path / "bare", versions=(), iterations=0)
    MetricsLog(bare.metrics_path).append([{"iteration": 1, "samples": 10, "policy_loss": 1.0}])
    missing = runner.invoke(app, ["plot", str(bare.path), "--x", "minutes"])
    assert missing.exit_code == 2 and "wall_seconds" in missing.output


def test_plot_without_metrics_is_exit_2(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", versions=(), iterations=0)
    result = runner.invoke(app, ["plot", str(run.path)])
    assert result.exit_code == 2 and "no metrics yet" in result.output


def test_list_still_works(tmp_path: Path) -> None:
    make_run(tmp_path / "a")
    result = runner.invoke(app, ["list", str(tmp_path), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["path"].endswith("a")


def test_compare_puts_runs_side_by_side_at_the_same_samples(tmp_path: Path) -> None:
    short, long = make_run(tmp_path / "short", iterations=8), make_run(tmp_path / "long", iterations=20)
    result = runner.invoke(
        app, ["compare", str(short.path), str(long.path), "--metric", "entropy", "--every", "5000", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["marks"] == [5000, 10000, 15000, 20000]
    by_run = {Path(r["path"]).name: r for r in data["runs"]}
    # at 5,000 samples both logged iteration 5; the short run ends at 8,000 and has nothing past it
    assert by_run["short"]["metrics"]["entropy"] == [pytest.approx(2.95), None, None, None]
    assert by_run["long"]["metrics"]["entropy"] == pytest.approx([2.95, 2.9, 2.85, 2.8])
    assert by_run["short"]["samples"] == 8000 and by_run["short"]["last"]["entropy"] == pytest.approx(2.92)

    text = runner.invoke(app, ["compare", str(short.path), str(long.path), "--metric", "entropy"]).stdout
    assert "entropy by samples" in text and "short" in text and "2.92 at 8,000" in text
    png = tmp_path / "compare.png"
    plotted = runner.invoke(
        app, ["compare", str(short.path), str(long.path), "--plot", str(png), "--metric", "win_rate"]
    )
    assert plotted.exit_code == 0, plotted.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_refuses_a_metric_no_run_logged_and_a_bad_spacing(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    missing = runner.invoke(app, ["compare", str(run.path), "--metric", "bot_win_rate_recent"])
    assert_bad_input(missing, "no run logged bot_win_rate_recent", "entropy")  # and what was logged
    spacing = runner.invoke(app, ["compare", str(run.path), "--metric", "entropy", "--every", "0"])
    assert_bad_input(spacing, "--every")
