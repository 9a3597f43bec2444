"""``fivectl model summary``: block counts that add up to the real network's parameters."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from fivectl.cli.model import app
from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.schema import load_schema

runner = CliRunner()


def test_summary_json_counts_every_parameter_of_the_built_network(quickstart):
    result = runner.invoke(app, ["summary", str(quickstart), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    recipe = load_recipe(quickstart)
    net = PolicyNet(load_schema(recipe.model.schema_version), recipe.model, recipe.game.team_size)
    assert data["parameters"] == sum(p.numel() for p in net.parameters())
    assert data["parameters"] == sum(data["blocks"].values())
    assert data["blocks"]["lstm"] == sum(p.numel() for p in net.lstm.parameters())
    unitset = next(g.name for g in load_schema(1).groups if g.kind == "unitset")
    assert {"fc", "heads.primary", "heads.target_query", "aux.win", f"encoder.unitsets.{unitset}"} <= set(
        data["blocks"]
    )


def test_summary_applies_overrides(quickstart):
    small = json.loads(runner.invoke(app, ["summary", str(quickstart), "--json"]).output)
    big = runner.invoke(app, ["summary", str(quickstart), "--json", "--set", "model.lstm_size=256"])
    assert big.exit_code == 0, big.output
    lstm = json.loads(big.output)["blocks"]["lstm"]
    assert lstm == 4 * 256 * (128 + 256) + 8 * 256 != small["blocks"]["lstm"]


def test_summary_table_shows_blocks_and_total(quickstart):
    result = runner.invoke(app, ["summary", str(quickstart)])
    assert result.exit_code == 0, result.output
    assert "lstm" in result.output and "total" in result.output


def test_bad_recipe_is_exit_2(tmp_path, quickstart):
    assert runner.invoke(app, ["summary", str(tmp_path / "missing.toml")]).exit_code == 2
    result = runner.invoke(app, ["summary", str(quickstart), "--set", "model.lstm_size=0"])
    assert result.exit_code == 2
    assert "model.lstm_size" in result.output


def test_paper_scale_recipe_is_openai_five_sized(repo):
    result = runner.invoke(app, ["summary", str(repo / "recipes" / "paper-scale.toml"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # Paper appendix H: 158,502,815 parameters. Ours depends on the schema's groups too: within 5%.
    assert abs(data["parameters"] - 158_502_815) / 158_502_815 < 0.05
    assert data["blocks"]["lstm"] == 4 * 4096 * (4096 + 4096) + 8 * 4096
