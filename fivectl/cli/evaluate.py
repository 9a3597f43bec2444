"""``fivectl evaluate match``: play agents against each other on the embedded MOBA."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fivectl.cli.common import handle_errors, out_console, print_json
from fivectl.config import GameConfig, load_recipe
from fivectl.errors import BadInput

app = typer.Typer(help="Evaluate agents: matches between agents and scripted bots.", no_args_is_help=True)

DEFAULT_RECIPE = Path("recipes") / "quickstart.toml"
REPO_RECIPE = Path(__file__).resolve().parents[2] / DEFAULT_RECIPE

AgentArg = Annotated[
    str, typer.Argument(help="random, bot:passive, bot:easy or bot:medium.", show_default=False)
]


@app.command("match")
@handle_errors
def match(
    a: AgentArg,
    b: AgentArg,
    games: Annotated[int, typer.Option("--games", "-n", help="Number of games; sides alternate.")] = 20,
    recipe: Annotated[
        Path | None,
        typer.Option(
            "--recipe", help="Recipe whose [game] section is played (default: recipes/quickstart.toml)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the games and of the agents' randomness.")] = 0,
    batch: Annotated[int, typer.Option("--batch", help="Games simulated at once.")] = 32,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a recipe key: --set game.lanes=3.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Play GAMES games of A against B (A on team 0 in even games, team 1 in odd ones) and report wins, draws,
    A's win rate with a 95% Wilson interval (a draw counts half), game length, kills and towers per side."""
    from fivectl.evaluate import parse_agent, play_match
    from fivectl.schema import load_schema

    if games < 1:
        raise BadInput(f"--games: must be >= 1, got {games}")
    if batch < 1:
        raise BadInput(f"--batch: must be >= 1, got {batch}")
    agent_a, agent_b = parse_agent(a), parse_agent(b)
    game_cfg, schema_version = _game_section(recipe, set_ or [])
    # An agent that reads a fixed schema (a checkpoint) decides; otherwise the recipe's schema is encoded.
    reads_own_schema = agent_a.schema_version is not None or agent_b.schema_version is not None
    schema = None if reads_own_schema else load_schema(schema_version)
    result = play_match(agent_a, agent_b, game_cfg, games=games, seed=seed, batch=batch, schema=schema)
    if as_json:
        print_json({**result.to_dict(), "game": f"{game_cfg.team_size}v{game_cfg.team_size}"})
        return
    out_console.print(_report(result, game_cfg), highlight=False)


def _game_section(recipe: Path | None, overrides: list[str]) -> tuple[GameConfig, int]:
    """The [game] section and schema version of ``recipe``, else of the quickstart recipe, else the defaults."""
    if recipe is None:
        recipe = next((p for p in (DEFAULT_RECIPE, REPO_RECIPE) if p.is_file()), None)
    if recipe is None:
        if overrides:
            raise BadInput("--set needs a recipe: no --recipe given and recipes/quickstart.toml not found")
        return GameConfig(), 1
    resolved = load_recipe(recipe, overrides)
    return resolved.game, resolved.model.schema_version


def _report(r, game_cfg: GameConfig) -> str:
    lo, hi = r.a_win_rate_ci95
    width = max(len(r.a), len(r.b))
    return "\n".join(
        [
            f"{r.games} games, {game_cfg.team_size}v{game_cfg.team_size}, {game_cfg.lanes} lane(s), seed {r.seed}",
            f"  A {r.a:<{width}}  wins {r.a_wins:>4}  kills/game {r.a_kills_mean:6.2f}  towers/game {r.a_towers_mean:5.2f}",
            f"  B {r.b:<{width}}  wins {r.b_wins:>4}  kills/game {r.b_kills_mean:6.2f}  towers/game {r.b_towers_mean:5.2f}",
            f"  draws {r.draws}; A win rate {r.a_win_rate:.3f} (95% CI {lo:.3f}-{hi:.3f}, a draw counts half)",
            f"  mean game {r.mean_game_seconds:.1f} game-seconds; {r.wall_seconds:.1f} s wall",
        ]
    )
