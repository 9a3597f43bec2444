"""The recipes shipped inside the package (``fivectl/recipes/NAME.toml``), found by name from any directory.

``fivectl train quickstart`` is ``fivectl train <package>/recipes/quickstart.toml``: a recipe argument that is
a bare name (no ``.toml``, no directory part) and not an existing file names a shipped recipe. Anything else is
a path, read as given.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from fivectl.errors import BadInput

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "recipes"


@dataclass(frozen=True)
class ShippedRecipe:
    name: str
    path: Path
    description: str


def shipped_recipe_paths() -> dict[str, Path]:
    """Name -> path of every shipped recipe, by name."""
    return {p.stem: p for p in sorted(SHIPPED_DIR.glob("*.toml"), key=lambda p: p.stem)}


def shipped_recipes() -> list[ShippedRecipe]:
    """Every shipped recipe with its one-line ``description`` (the recipe's own field)."""
    return [
        ShippedRecipe(name=name, path=path, description=_description(path))
        for name, path in shipped_recipe_paths().items()
    ]


def is_recipe_name(arg: str | Path) -> bool:
    """A bare name such as ``quickstart``: no directory part, no suffix, and no file of that name here."""
    text = str(arg)
    path = Path(text)
    return bool(text) and path.name == text and not path.suffix and not path.exists()


def resolve_recipe(arg: str | Path) -> Path:
    """The file a recipe argument means: a shipped recipe for a bare name, else the path as given.

    An unknown name is BadInput listing the shipped names; a missing path is left to the reader ("no such file").
    """
    if not is_recipe_name(arg):
        return Path(arg)
    known = shipped_recipe_paths()
    if str(arg) in known:
        return known[str(arg)]
    names = ", ".join(known) or "none"
    raise BadInput(f"{arg}: no such recipe file, nor a shipped recipe (shipped: {names})")


def _description(path: Path) -> str:
    return str(tomllib.loads(path.read_text()).get("description", ""))
