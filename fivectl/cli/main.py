"""The ``fivectl`` command: one typer sub-app per command group, each in its own module."""

from __future__ import annotations

from typing import Annotated

import typer

from fivectl import __version__
from fivectl.cli import anneal, draft, evaluate, model, recipe, replay, runs, surgery
from fivectl.cli.train import train

app = typer.Typer(
    name="fivectl",
    help="Run a long-lived self-play RL experiment on a MOBA game, the way OpenAI Five was run.\n\n"
    "Exit codes: 0 ok, 1 run failed, 2 bad usage, config or input. FIVECTL_DEBUG=1 shows tracebacks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(recipe.app, name="recipe")
app.add_typer(runs.app, name="runs")
app.add_typer(model.app, name="model")
app.add_typer(evaluate.app, name="evaluate")
app.add_typer(surgery.app, name="surgery")
app.add_typer(draft.app, name="draft")
app.add_typer(replay.app, name="replay")
app.add_typer(anneal.app, name="anneal")
app.command("train")(train)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"fivectl {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """fivectl: train, change, evaluate and watch self-play MOBA agents."""


def main() -> None:
    app()


if __name__ == "__main__":
    main()
