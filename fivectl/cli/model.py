"""``fivectl model summary``: the network a recipe builds, block by block, with parameter counts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fivectl.cli.common import handle_errors, out_console, print_json
from fivectl.config import load_recipe
from fivectl.model.summary import model_summary
from fivectl.schema import load_schema

app = typer.Typer(help="Inspect the policy network a recipe builds.", no_args_is_help=True)

RecipeArg = Annotated[
    Path, typer.Argument(help="A TOML recipe, or a shipped recipe's name: quickstart, recipes/quickstart.toml.")
]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="Override a key: --set model.lstm_size=256.")]


@app.callback()
def model() -> None:
    """Inspect the policy network a recipe builds."""


@app.command("summary")
@handle_errors
def summary(
    recipe: RecipeArg,
    set_: SetOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"parameters": total, "blocks": {name: count}}.')
    ] = False,
) -> None:
    """Print each block of the network with its parameter count, and the total."""
    resolved = load_recipe(recipe, set_ or [])
    schema = load_schema(resolved.model.schema_version)
    result = model_summary(schema, resolved.model, resolved.game.team_size)
    if as_json:
        print_json(result)
        return
    total = result["parameters"]
    table = Table(title=f"{resolved.name}: schema v{schema.version}, team size {resolved.game.team_size}")
    table.add_column("block", style="cyan", no_wrap=True)
    table.add_column("parameters", justify="right")
    table.add_column("share", justify="right", style="dim")
    for name, count in result["blocks"].items():
        table.add_row(name, f"{count:,}", f"{100 * count / total:.1f}%")
    table.add_section()
    table.add_row("total", f"{total:,}", "100.0%", style="bold")
    out_console.print(table)
