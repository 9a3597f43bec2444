from __future__ import annotations

import json

import pytest

from fivectl.config import recipe_from_dict
from fivectl.errors import BadInput
from fivectl.store.rundir import RunDir


def test_create_open_and_lineage(tmp_path):
    recipe = recipe_from_dict({"name": "x", "train": {"workers": 1}})
    run = RunDir.create(tmp_path / "r", recipe, recipe_source="recipes/x.toml")
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["name"] == "x" and meta["schema_version"] == 2 and meta["lineage"] == []
    assert run.load_recipe() == recipe
    run.add_lineage({"event": "surgery", "from_version": 3, "to_version": 4})
    again = RunDir.open(tmp_path / "r")
    assert again.meta["lineage"][0]["event"] == "surgery"
    assert again.checkpoints_path.is_dir() and again.metrics_path.is_dir()


def test_create_refuses_an_existing_run(tmp_path):
    RunDir.create(tmp_path / "r", recipe_from_dict({}))
    with pytest.raises(BadInput, match="already holds a run"):
        RunDir.create(tmp_path / "r", recipe_from_dict({}))


def test_open_errors(tmp_path):
    with pytest.raises(BadInput, match="no such run"):
        RunDir.open(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(BadInput, match="not a fivectl run"):
        RunDir.open(tmp_path / "plain")
    (tmp_path / "plain" / "run.json").write_text("{broken")
    with pytest.raises(BadInput, match="unreadable run metadata"):
        RunDir.open(tmp_path / "plain")
