"""End to end from the CLI, one test per subcommand: a tiny trained run, the surgery, verify, and training on."""

from __future__ import annotations

import json

import tomli_w
from surgery_helpers import invoke, run_json, superset_dict

from fivectl.store.checkpoint import CheckpointStore


def test_add_obs_from_a_schema_file_then_verify(parent_run, tmp_path):
    schema_file = tmp_path / "plus.toml"
    schema_file.write_text(tomli_w.dumps(superset_dict(9)))
    out = tmp_path / "obs"
    result = invoke("surgery", "add-obs", f"{parent_run}@latest", "--schema", str(schema_file), "--out", str(out),
                    "--calibrate-games", "2")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "encoder.vector.self.0.weight" in result.stdout and "new input columns, zero" in result.stdout
    assert "schema v2 -> v9, parameters" in result.stdout
    verified = invoke("surgery", "verify", str(out))
    assert verified.exit_code == 0, verified.output
    assert "within 1e-05" in verified.stdout
    assert run_json(out)["schema"]["version"] == 9  # the run carries its schema: no schemas/obs/v9.toml needed
    trained = invoke("train", "--run", str(out), "--resume", "--max-samples", "450", "--json")
    assert trained.exit_code == 0, trained.output
    ckpt = CheckpointStore(out / "checkpoints.zarr").load()
    assert ckpt.version > 5 and ckpt.attrs["schema_version"] == 9
    # and it plays: a match encodes the checkpoint's own schema when no schemas/obs/v9.toml exists
    match = invoke("evaluate", "match", f"{out}@latest", "bot:easy", "--games", "2", "--set", "game.time_limit_s=10")
    assert match.exit_code == 0, match.output


def test_widen_then_verify_then_train_on(parent_run, tmp_path):
    out = tmp_path / "wide"
    result = invoke("surgery", "widen", str(parent_run), "--fc", "40", "--lstm", "20", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "lstm.weight_hh_l0" in result.stdout and "64x16" in result.stdout and "80x20" in result.stdout
    assert invoke("surgery", "verify", str(out)).exit_code == 0
    operated = CheckpointStore(out / "checkpoints.zarr").latest()
    trained = invoke("train", "--run", str(out), "--resume", "--max-samples", "500", "--json")
    assert trained.exit_code == 0, trained.output
    summary = json.loads(trained.stdout)
    assert summary["version"] > operated  # version numbers go on from the operated checkpoint
    ckpt = CheckpointStore(out / "checkpoints.zarr").load()
    assert ckpt.attrs["model_config"]["lstm_size"] == 20 and ckpt.arrays["model"]["lstm.weight_hh_l0"].shape == (80, 20)


def test_retire_then_verify_reports_drift(parent_run, tmp_path):
    out = tmp_path / "retired"
    result = invoke("surgery", "retire", str(parent_run), "--field", "self.buyback_cost", "--constant", "200",
                    "--out", str(out), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["operation"] == "retire" and report["args"]["field"] == "self.buyback_cost"
    names = {row["name"]: row for row in report["changed"]}
    assert "encoder.vector.self.0.bias" in names and "folded in" in names["encoder.vector.self.0.bias"]["note"]
    schema = run_json(out)["schema"]
    field = next(f for g in schema["groups"] if g["name"] == "self" for f in g["fields"] if f["name"] == "buyback_cost")
    assert field["retired"] is True and field["constant"] == 200.0
    verified = invoke("surgery", "verify", str(out))
    assert verified.exit_code == 0 and "drift" in verified.stdout


def test_add_obs_onto_schema_v3_keeps_the_function_and_calibrates_the_new_inputs(parent_run, tmp_path):
    out = tmp_path / "v3"
    result = invoke("surgery", "add-obs", str(parent_run), "--schema", "3", "--out", str(out),
                    "--calibrate-games", "2", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["operation"] == "add-obs"
    assert run_json(out)["schema"]["version"] == 3
    verified = invoke("surgery", "verify", str(out), "--json")
    assert verified.exit_code == 0, verified.output
    # v3's enemy lineup is a new categorical input: its embedding exists and its first-layer columns are zero
    ckpt = CheckpointStore(out / "checkpoints.zarr").load()
    assert ckpt.attrs["schema_version"] == 3
    assert any("enemy_lineup" in name for name in ckpt.arrays["model"])
