"""The recipes and observation schemas ship inside the package: found by name from any directory, listed in the
package data the wheel carries, and the repository's top-level ``recipes`` and ``schemas`` are links to them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fivectl.config import load_recipe
from fivectl.config.recipes import SHIPPED_DIR, resolve_recipe, shipped_recipe_paths, shipped_recipes
from fivectl.errors import BadInput
from fivectl.schema.spec import schemas_dir

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "fivectl"
SHIPPED_NAMES = {"quickstart", "five-v-five", "five-v-five-quick", "five-v-five-curriculum", "paper-scale"}


def test_every_shipped_recipe_loads_under_its_name_with_a_description():
    recipes = shipped_recipes()
    assert {r.name for r in recipes} == SHIPPED_NAMES
    for r in recipes:
        assert load_recipe(r.name).name == r.name
        assert r.description and "\n" not in r.description
        assert r.path.parent == PACKAGE / "recipes"


def test_a_bare_name_resolves_to_the_shipped_recipe_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_recipe("quickstart") == PACKAGE / "recipes" / "quickstart.toml"
    assert load_recipe("quickstart", ["train.workers=3"]).train.workers == 3


def test_an_existing_file_or_a_path_is_read_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("quickstart").write_text('name = "mine"\n')  # a file of that name here wins over the shipped recipe
    assert load_recipe("quickstart").name == "mine"
    assert resolve_recipe("recipes/quickstart.toml") == Path("recipes/quickstart.toml")
    with pytest.raises(BadInput, match="no such file"):
        load_recipe("quickstart.toml")  # a .toml name is a path: not looked up among the shipped ones


def test_an_unknown_name_is_one_line_naming_the_shipped_ones():
    with pytest.raises(BadInput) as info:
        load_recipe("quickstrat")
    message = str(info.value)
    assert "\n" not in message and "quickstrat" in message
    assert all(name in message for name in SHIPPED_NAMES)


def test_schemas_are_read_from_the_package(monkeypatch):
    monkeypatch.delenv("FIVECTL_SCHEMAS", raising=False)
    assert schemas_dir() == PACKAGE / "schemas"
    assert sorted(p.name for p in (schemas_dir() / "obs").glob("v*.toml"))[:2] == ["v1.toml", "v2.toml"]


def test_the_repository_recipes_and_schemas_are_links_into_the_package():
    assert (REPO / "recipes").is_symlink() and (REPO / "recipes").resolve() == SHIPPED_DIR
    assert (REPO / "schemas").is_symlink() and (REPO / "schemas").resolve() == PACKAGE / "schemas"
    assert (REPO / "recipes" / "quickstart.toml").is_file()


def test_package_data_ships_every_recipe_and_schema_file():
    """A file the package-data patterns miss would be absent from the wheel (``pip install .`` without -e)."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["fivectl"]
    shipped = {p for pattern in patterns for p in PACKAGE.glob(pattern) if p.is_file()}
    data_files = {
        p for folder in ("recipes", "schemas") for p in (PACKAGE / folder).rglob("*") if p.is_file()
    }
    assert data_files and data_files <= shipped, sorted(str(p) for p in data_files - shipped)
    assert set(shipped_recipe_paths().values()) <= shipped


def test_the_quick_5v5_recipe_has_the_quickstarts_network_so_init_from_carries_it_over():
    """README: ``fivectl train five-v-five-quick --init-from QUICKSTART_RUN`` loads every parameter but the
    team-sized head, which needs the same [model] (a narrower encoder in one of them fails with exit 2)."""
    assert load_recipe("five-v-five-quick").model == load_recipe("quickstart").model


def test_the_curriculum_recipe_is_five_v_five_quick_from_a_quickstart_first_stage():
    """Its first stage can start its run (checked as train does before the stage trains), and it differs from
    five-v-five-quick only in what its comments say: the curriculum, the doubled building rewards, the bonus, the learning rate."""
    import dataclasses

    from fivectl.runtime.init_from import check_first_stage_fits
    from fivectl.schema import load_schema

    recipe, quick = load_recipe("five-v-five-curriculum"), load_recipe("five-v-five-quick")
    first = load_recipe(recipe.curriculum.first)
    assert first.name == "quickstart" and recipe.curriculum.first_samples > 0
    check_first_stage_fits(first, load_schema(first.model.schema_version), recipe, load_schema(2))
    assert (recipe.game, recipe.model, recipe.selfplay) == (quick.game, quick.model, quick.selfplay)
    assert recipe.train == dataclasses.replace(
        quick.train, entropy_coef=recipe.train.entropy_coef, learning_rate=recipe.train.learning_rate
    )
    buildings = ("tower_t1", "tower_t2", "tower_t3", "tower_t4", "barracks", "ancient_hp")
    for name in buildings:
        assert getattr(recipe.reward, name) == 2 * getattr(quick.reward, name), name
    others = {k: v for k, v in dataclasses.asdict(recipe.reward).items() if k not in buildings}
    assert others == {k: v for k, v in dataclasses.asdict(quick.reward).items() if k not in buildings}
