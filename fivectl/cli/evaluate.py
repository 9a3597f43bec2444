"""``fivectl evaluate match|trueskill|pin``: matches between agents, TrueSkill ratings of a run's checkpoints."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fivectl.cli.common import err_console, handle_errors, out_console, print_json
from fivectl.config import GameConfig, load_recipe
from fivectl.errors import BadInput

app = typer.Typer(
    help="Evaluate agents: matches, TrueSkill ratings of checkpoints, pinned references.",
    no_args_is_help=True,
)

DEFAULT_RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "quickstart.toml"  # the shipped one

AgentArg = Annotated[
    str,
    typer.Argument(
        help="random, bot:passive, bot:easy, bot:medium, RUN_DIR@VERSION or RUN_DIR@latest (the newest checkpoint "
        "that loads: a corrupt newest one is skipped with a warning).",
        show_default=False,
    ),
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
            "--recipe", help="Recipe whose game section is played (default: recipes/quickstart.toml)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the games and of the agents' randomness.")] = 0,
    batch: Annotated[int, typer.Option("--batch", help="Games simulated at once.")] = 32,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a recipe key: --set game.lanes=3.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record", help="Write one replay per game into this directory (fivectl replay list DIR)."
        ),
    ] = None,
    lineup: Annotated[
        str | None,
        typer.Option(
            "--lineup",
            help="Heroes of A vs heroes of B in every game, e.g. 'Ashcaller vs Kestrel' (5v5: comma-separated); "
            "they follow their agent when sides alternate. Default: random lineups.",
        ),
    ] = None,
    change: Annotated[
        str | None,
        typer.Option(
            "--change",
            help="Every game runs this change of the game (fivectl anneal list), or 'none'. Default: the change "
            "the agents' runs keep (fivectl anneal stop --keep), if any.",
        ),
    ] = None,
) -> None:
    """Play GAMES games of A against B (A on team 0 in even games, team 1 in odd ones) and report wins, draws,
    A's win rate with a 95% Wilson interval (a draw counts half), game length, kills and towers per side.
    With --record DIR, every game is also saved as a replay, with what the policies predicted."""
    from fivectl.evaluate import parse_agent, play_match
    from fivectl.evaluate.match import env_with_change
    from fivectl.evaluate.run_eval import use_one_torch_thread
    from fivectl.schema import load_schema
    from fivectl.sim import format_lineup

    use_one_torch_thread()

    if games < 1:
        raise BadInput(f"--games: must be >= 1, got {games}")
    if batch < 1:
        raise BadInput(f"--batch: must be >= 1, got {batch}")
    if record is not None and record.exists() and not record.is_dir():
        raise BadInput(f"--record: {record} is a file, not a directory")
    with fallback_warnings_on_stderr():
        agent_a, agent_b = parse_agent(a), parse_agent(b)
    game_cfg, schema_version = _game_section(recipe, set_ or [])
    heroes = _parse_lineup(lineup, game_cfg) if lineup is not None else None
    game_change = _match_change(change, agent_a, agent_b)
    # An agent that reads a fixed schema (a checkpoint) decides; otherwise the recipe's schema is encoded.
    reads_own_schema = agent_a.schema_version is not None or agent_b.schema_version is not None
    schema = None if reads_own_schema else load_schema(schema_version)
    with games_progress("games", shown=not as_json, total=games) as on_game:
        result = play_match(
            agent_a, agent_b, game_cfg, games=games, seed=seed, batch=batch, schema=schema, record=record,
            lineups=heroes, make_env=env_with_change(game_change), progress=on_game,
        )
    if as_json:
        shown = {"lineup": format_lineup(heroes)} if heroes is not None else {}
        print_json(
            {**result.to_dict(), "game": f"{game_cfg.team_size}v{game_cfg.team_size}", "change": game_change, **shown}
        )
        return
    if heroes is not None:
        out_console.print(f"lineup: A {format_lineup(heroes).replace(' vs ', ', B ')}", highlight=False)
    if game_change is not None:
        out_console.print(f"every game runs the change {game_change}", highlight=False)
    out_console.print(_report(result, game_cfg), highlight=False)


@contextmanager
def games_progress(
    label: str, shown: bool, total: int | None = None
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar of games on stderr (done / total, elapsed, time left), gone when the work ends; the
    callback that moves it, ``on_game(done, total)``. None (no bar) with --json or when stderr is no terminal.
    ``total``: the games known before the first ends, if any."""
    if not shown or not err_console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(label, total=total)

        def on_game(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield on_game


@contextmanager
def fallback_warnings_on_stderr() -> Iterator[None]:
    """A ``RUN@latest`` whose newest checkpoint is corrupt plays the newest good one: say so on one stderr line
    (``warning: ...``), as training does when it resumes past a corrupt checkpoint. Other warnings pass on."""
    from fivectl.store.checkpoint import CheckpointFallbackWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CheckpointFallbackWarning)
        yield
    for w in caught:
        if issubclass(w.category, CheckpointFallbackWarning):
            err_console.print(f"warning: {' '.join(str(w.message).split())}", highlight=False, soft_wrap=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _parse_lineup(text: str, game_cfg: GameConfig):
    """int [2, k] hero ids of ``--lineup`` (side A, side B), checked against the game's size and hero pool."""
    from fivectl.sim import check_lineup, parse_lineup, resolve_pool

    heroes = parse_lineup(text, game_cfg.team_size)
    check_lineup(heroes, game_cfg.team_size, resolve_pool(game_cfg))
    return heroes


def _match_change(change: str | None, *agents) -> str | None:
    """The change every game of the match runs: ``--change`` (a registered name or 'none'), else the one the
    agents' runs keep; runs that keep different games are bad input unless ``--change`` says which to play."""
    from fivectl.sim import get_change

    if change is not None:
        return None if change == "none" else get_change(change).name
    kept = {a.spec: getattr(a, "game_change", None) for a in agents if hasattr(a, "game_change")}
    games = set(kept.values())
    if len(games) > 1:
        shown = ", ".join(f"{spec} plays {c or 'the unchanged game'}" for spec, c in kept.items())
        raise BadInput(f"the agents' runs play different games ({shown}); choose one with --change NAME|none")
    return games.pop() if games else None


def _game_section(recipe: Path | None, overrides: list[str]) -> tuple[GameConfig, int]:
    """The [game] section and schema version of ``recipe``, else of the quickstart recipe, else the defaults."""
    if recipe is None:
        recipe = DEFAULT_RECIPE if DEFAULT_RECIPE.is_file() else None
    if recipe is None:
        if overrides:
            raise BadInput("--set needs a recipe: no --recipe given and recipes/quickstart.toml not found")
        return GameConfig(), 1
    resolved = load_recipe(recipe, overrides)
    return resolved.game, resolved.model.schema_version


def _side_line(
    side: str, spec: str, width: int, wins: int, kills: float, towers: float, building_hp: float
) -> str:
    return (
        f"  {side} {spec:<{width}}  wins {wins:>4}  kills/game {kills:6.2f}  towers/game {towers:5.2f}"
        f"  building HP taken/game {building_hp:5.2f}"
    )


def _report(r, game_cfg: GameConfig) -> str:
    lo, hi = r.a_win_rate_ci95
    width = max(len(r.a), len(r.b))
    return "\n".join(
        [
            f"{r.games} games, {game_cfg.team_size}v{game_cfg.team_size}, {game_cfg.lanes} lane(s), seed {r.seed}",
            _side_line("A", r.a, width, r.a_wins, r.a_kills_mean, r.a_towers_mean, r.a_building_hp_mean),
            _side_line("B", r.b, width, r.b_wins, r.b_kills_mean, r.b_towers_mean, r.b_building_hp_mean),
            f"  draws {r.draws}; A win rate {r.a_win_rate:.3f} (95% CI {lo:.3f}-{hi:.3f}, a draw counts half)",
            f"  mean game {r.mean_game_seconds:.1f} game-seconds; {r.wall_seconds:.1f} s wall",
            *_team_play_lines(r, width),
        ]
    )


def _team_play_lines(r, width: int) -> list[str]:
    """Team play of each side (games of two or more heroes a side): grouped kills, lanes covered, time at home."""
    if r.a_lanes_covered is None:
        return []

    def share(value: float | None) -> str:
        return "   -" if value is None else f"{value:4.2f}"

    return [
        "  team play: kills with 2+ of the team near (mean per game), lanes covered (of the game's lanes),"
        " share of hero-time in its own base",
        *(
            f"  {side} {spec:<{width}}  grouped kills {share(grouped)}  lanes covered {lanes:4.2f}"
            f"  at home {share(home)}"
            for side, spec, grouped, lanes, home in (
                ("A", r.a, r.a_grouped_kill_share, r.a_lanes_covered, r.a_home_share),
                ("B", r.b, r.b_grouped_kill_share, r.b_lanes_covered, r.b_home_share),
            )
        ),
    ]


@app.command("trueskill")
@handle_errors
def trueskill(
    run: Annotated[Path, typer.Argument(help="Run directory whose checkpoints are rated.")],
    versions: Annotated[
        str, typer.Option("--versions", help="latest, all, or a list like 10,20,30.")
    ] = "latest",
    games: Annotated[
        int | None, typer.Option("--games", "-n", help="Games per version (default: eval.games).")
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Processes sharing the games of large batches (reference calibration rounds, long matches).",
        ),
    ] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the league's matches.")] = 0,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a PNG of rating against version.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Rate checkpoints with TrueSkill against fixed references (random = 0); results accumulate in the run."""
    from fivectl.evaluate.run_eval import evaluate_run, use_one_torch_thread

    if games is not None and games < 1:
        raise BadInput(f"--games: must be >= 1, got {games}")
    if workers < 1:
        raise BadInput(f"--workers: must be >= 1, got {workers}")
    use_one_torch_thread()
    with games_progress("league games", shown=not as_json) as on_game:
        league, rated = evaluate_run(
            run, versions=versions, games=games, workers=workers, seed=seed, on_game=on_game
        )
    if plot is not None:
        league.plot_ratings(plot)
    if as_json:
        print_json({**league.summary(), "rated": rated, "plot": str(plot) if plot else None})
        return
    out_console.print(leaderboard_table(league))
    out_console.print(winrate_table(league))
    if plot is not None:
        out_console.print(f"rating plot: {plot}")


@app.command("pin")
@handle_errors
def pin(
    agent: Annotated[
        str, typer.Argument(help="RUN_DIR@VERSION: a rated checkpoint to keep as a fixed reference.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Pin a rated checkpoint: from now on it is a reference with a fixed rating."""
    from fivectl.evaluate.policy_agent import split_spec
    from fivectl.evaluate.run_eval import pin_version

    run_dir, version, _ = split_spec(agent)
    try:
        number = int(version.lstrip("v"))
    except ValueError:
        raise BadInput(f"{agent!r}: pin needs an explicit version number, e.g. runs/x@120") from None
    league = pin_version(run_dir, number)
    rating = league.rating(f"v{number}")
    if as_json:
        print_json({"pinned": f"v{number}", "mu": rating.mu, "sigma": rating.sigma})
    else:
        out_console.print(f"pinned v{number}: mu {rating.mu:.2f}, sigma {rating.sigma:.2f}")


def leaderboard_table(league) -> Table:
    table = Table(title="TrueSkill leaderboard (random = 0)")
    for col in ("agent", "role", "mu", "sigma", "mu-3sigma", "games"):
        table.add_column(col, justify="left" if col in ("agent", "role") else "right")
    for row in league.leaderboard():
        role = row.role + (" (fixed)" if row.fixed else "")
        table.add_row(
            row.name, role, f"{row.mu:.2f}", f"{row.sigma:.2f}", f"{row.conservative:.2f}", str(row.games)
        )
    return table


def winrate_table(league) -> Table:
    matrix = league.winrate_matrix()
    table = Table(title="win rate of row against column (games)")
    table.add_column("")
    for name in matrix.names:
        table.add_column(name, justify="right")
    rates = matrix.rates
    for i, name in enumerate(matrix.names):
        cells = []
        for j in range(len(matrix.names)):
            n = int(matrix.games[i, j])
            cells.append("-" if n == 0 else f"{rates[i, j]:.2f} ({n})")
        table.add_row(name, *cells)
    return table
