from __future__ import annotations

from pathlib import Path

import pytest

from fivectl.config import Schedule, load_recipe, recipe_from_dict
from fivectl.errors import BadInput, ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["quickstart.toml", "five-v-five.toml"])
def test_shipped_recipes_load(name):
    recipe = load_recipe(REPO / "recipes" / name)
    assert recipe.name in name


def test_defaults_are_the_papers():
    r = recipe_from_dict({})
    assert r.reward.win == 5.0 and r.reward.death == -1.0 and r.reward.last_hit == -0.16
    assert r.train.gae_lambda == 0.95 and r.train.clip == 0.2 and r.train.dual_clip == 3.0
    assert r.selfplay.latest_fraction == 0.8 and r.selfplay.eta == 0.01
    assert r.eval.draw_probability == 0.02


def test_every_error_is_reported_at_once_with_its_key_path():
    with pytest.raises(ConfigError) as info:
        recipe_from_dict({"train": {"learning_rate": -1, "lernrate": 2, "workers": "x"}, "gam": {}})
    errors = info.value.errors
    assert "train.learning_rate: must be >= 0, got -1" in errors
    assert "train.lernrate: unknown key (did you mean train.learning_rate?)" in errors
    assert "gam: unknown key (did you mean game?)" in errors
    assert any(e.startswith("train.workers: expected int") for e in errors)
    assert len(errors) == 4


def test_overrides_are_toml_values():
    r = recipe_from_dict({}, overrides=["train.learning_rate=1e-4", "game.team_size=5", "name=abc"])
    assert r.train.learning_rate(0) == pytest.approx(1e-4)
    assert r.game.team_size == 5 and r.name == "abc"


def test_override_without_equals_is_bad_input():
    with pytest.raises(BadInput):
        recipe_from_dict({}, overrides=["train.learning_rate"])


def test_cross_field_validation_names_the_key():
    with pytest.raises(ConfigError) as info:
        recipe_from_dict({"game": {"team_size": 5, "hero_pool": ["a", "b", "c"]}})
    assert info.value.errors[0].startswith("game.team_size:")


def test_schedules_interpolate_and_validate():
    r = recipe_from_dict({"train": {"horizon_s": {"points": [[0, 6], [100, 60]]}}})
    assert r.train.horizon_s(50) == pytest.approx(33.0)
    assert r.train.horizon_s(1e9) == 60.0
    step = Schedule(points=[[0, 1.0], [10, 2.0]], interp="step")
    assert step(9.9) == 1.0 and step(10) == 2.0
    with pytest.raises(ConfigError) as info:
        recipe_from_dict({"train": {"horizon_s": {"points": [[10, 6], [0, 60]], "interp": "cubic"}}})
    assert any("x values must increase" in e for e in info.value.errors)
    assert any("train.horizon_s.interp" in e for e in info.value.errors)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        load_recipe(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[train\nworkers = 2")
    with pytest.raises(BadInput, match="unreadable TOML"):
        load_recipe(bad)


def test_round_trip_through_dict():
    r = load_recipe(REPO / "recipes" / "five-v-five.toml")
    again = recipe_from_dict(r.to_dict())
    assert again == r
