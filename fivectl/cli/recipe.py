"""``fivectl recipe list|show|check``: the shipped recipes, the resolved recipe, and every error in it at once."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import tomli_w
import typer
from rich.table import Table

from fivectl.cli.common import handle_errors, out_console, print_json
from fivectl.config import Recipe, load_recipe
from fivectl.config.fields import Schedule
from fivectl.config.recipes import shipped_recipes

app = typer.Typer(help="Inspect and validate TOML recipes.", no_args_is_help=True)

RecipeArg = Annotated[
    Path, typer.Argument(help="A TOML recipe, or a shipped recipe's name: quickstart, recipes/quickstart.toml.")
]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="Override a key: --set train.learning_rate=1e-4.")
]


@app.command("list")
@handle_errors
def list_recipes(
    as_json: Annotated[
        bool, typer.Option("--json", help='Print [{"name", "description", "path"}] as JSON.')
    ] = False,
) -> None:
    """List the recipes shipped with fivectl: fivectl train NAME trains one from any directory."""
    recipes = shipped_recipes()
    if as_json:
        print_json([{"name": r.name, "description": r.description, "path": str(r.path)} for r in recipes])
        return
    width = max((len(r.name) for r in recipes), default=0)
    for r in recipes:
        out_console.print(f"{r.name:<{width}}  {r.description}", highlight=False, markup=False, soft_wrap=True)


@app.command("show")
@handle_errors
def show(
    recipe: RecipeArg,
    set_: SetOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the resolved recipe as JSON.")] = False,
    docs: Annotated[bool, typer.Option("--docs", help="Show every field with its documentation.")] = False,
) -> None:
    """Print the resolved recipe (defaults filled in, overrides applied)."""
    resolved = load_recipe(recipe, set_ or [])
    if as_json:
        print_json(resolved.to_dict())
    elif docs:
        out_console.print(_docs_table(resolved))
    else:
        out_console.print(tomli_w.dumps(resolved.to_dict()), highlight=False, markup=False)


@app.command("check")
@handle_errors
def check(recipe: RecipeArg, set_: SetOpt = None) -> None:
    """Validate a recipe; report every error with its key path (exit 2 if any)."""
    load_recipe(recipe, set_ or [])
    out_console.print(f"{recipe}: ok")


def _docs_table(resolved: Recipe) -> Table:
    table = Table(title="recipe fields", show_lines=False)
    table.add_column("key", style="cyan", no_wrap=True)
    table.add_column("value")
    table.add_column("doc", style="dim")
    for section in dataclasses.fields(resolved):
        value = getattr(resolved, section.name)
        if not dataclasses.is_dataclass(value):
            table.add_row(section.name, repr(value), section.metadata.get("doc", ""))
            continue
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            shown = v.to_toml() if isinstance(v, Schedule) else v
            table.add_row(f"{section.name}.{f.name}", repr(shown), f.metadata.get("doc", ""))
    return table
