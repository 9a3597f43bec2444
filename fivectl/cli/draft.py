"""``fivectl draft precompute|advise|simulate|calibrate``: hero drafting from the win-probability head (paper D.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fivectl.cli.common import err_console, handle_errors, out_console, print_json
from fivectl.errors import BadInput

app = typer.Typer(
    help="Draft heroes with the model's first-frame win probability: precompute a table, get pick advice, "
    "measure drafting in games and the win head's calibration.",
    no_args_is_help=True,
)

ModelArg = Annotated[str, typer.Argument(help="RUN_DIR@VERSION or RUN_DIR@latest: the checkpoint that rates lineups.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
OrderOpt = Annotated[
    str | None,
    typer.Option("--order", help="Picks per turn, alternating teams, e.g. 1-2-2-2-2-1 (default: that for 5v5, 1-1 for 1v1)."),
]
FirstOpt = Annotated[int, typer.Option("--first", help="The team (0 or 1) whose turn comes first.")]
ModeOpt = Annotated[
    str, typer.Option("--mode", help="minimax (the opponent picks its best) or expectimax (it picks at random).")
]


def _progress(description: str):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn(description), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=err_console,
        transient=True,
    )  # fmt: skip


def _model(spec: str, threads: int = 1):
    """The checkpoint, which must observe the enemy lineup in its first frame (schema v3's global.enemy_lineup):
    without it the win head cannot tell matchups apart. Games run one torch thread per process (small batches,
    ``use_one_torch_thread``); precompute's large products use ``threads``."""
    import torch

    from fivectl.cli.evaluate import fallback_warnings_on_stderr
    from fivectl.draft.model import load_draft_model, require_enemy_lineup

    torch.set_num_threads(threads)
    with fallback_warnings_on_stderr():
        model = load_draft_model(spec)
    require_enemy_lineup(model)
    return model


@app.command("precompute")
@handle_errors
def precompute(
    model: ModelArg,
    out: Annotated[Path, typer.Option("--out", help="Zarr store of the table (a rerun resumes it).")],
    game: Annotated[
        str | None, typer.Option("--game", help="1v1 or 5v5: checked against the model's game.")
    ] = None,
    chunk: Annotated[int, typer.Option("--chunk", help="Lineups per stored chunk (the unit of resume).")] = 65536,
    batch: Annotated[int, typer.Option("--batch", help="Lineups per forward pass.")] = 4096,
    lane_samples: Annotated[
        int, typer.Option("--lane-samples", help="Random lane assignments averaged per lineup (3-lane games).")
    ] = 3,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Stop after the chunks holding the first LIMIT lineups.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the lane assignments.")] = 0,
    method: Annotated[
        str,
        typer.Option("--method", help="factored (lineup-independent work once per team; checked against direct on "
                     "sample lineups) or direct (the whole network per lineup). Same values."),
    ] = "factored",
    threads: Annotated[
        int | None, typer.Option("--threads", help="torch threads for the products (default: every core this "
                                 "process may use).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rate every lineup by the model's first-frame P(team 0 wins) into a Zarr table (1v1: 272, 5v5: 4,900,896)."""
    from fivectl.draft.table import precompute as run_precompute
    from fivectl.runtime.distributed import usable_cores

    if threads is not None and threads < 1:
        raise BadInput(f"--threads: at least 1, got {threads}")
    m = _model(model, threads or usable_cores())
    if game is not None and game != m.game_name:
        raise BadInput(f"--game {game}: the model plays {m.game_name}")
    with _progress("rating lineups") as bar:
        task = bar.add_task("lineups", total=None)
        report = run_precompute(
            m, out, chunk=chunk, batch=batch, lane_samples=lane_samples, limit=limit, seed=seed, method=method,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )  # fmt: skip
    d = {**report.__dict__, "game": m.game_name, "model": m.spec, "model_version": m.version,
         "schema_version": m.schema.version}  # fmt: skip
    if as_json:
        print_json(d)
        return
    state = "complete" if report.complete else "incomplete (rerun to finish)"
    out_console.print(
        f"{out}: {report.lineups} lineups of {m.game_name}, {report.chunks_computed} chunk(s) computed, "
        f"{report.chunks_skipped} already done; {state}; {report.seconds:.1f} s ({report.method})",
        highlight=False,
    )


def _drafter(table_path: Path, order: str | None, first: int, mode: str):
    from fivectl.draft.search import Drafter, parse_order, standard_order
    from fivectl.draft.table import open_table

    if first not in (0, 1):
        raise BadInput(f"--first: 0 or 1, got {first}")
    table = open_table(table_path)
    groups = parse_order(order or standard_order(table.team_size), table.team_size)
    return table, Drafter(table, groups, first, mode)


def _advice_dict(advice, state) -> dict:
    from fivectl.sim import hero_names

    return {
        "team": advice.team,
        "pick": advice.pick,
        "win_prob": advice.win_prob,
        "p_team0_win": advice.value,
        "alternatives": [{"hero": h, "win_prob": v} for h, v in advice.alternatives],
        "picks": [hero_names(state.teams[0]), hero_names(state.teams[1])],
        "bans": hero_names(state.bans),
    }


@app.command("advise")
@handle_errors
def advise(
    table: Annotated[Path, typer.Argument(help="A table made by fivectl draft precompute.")],
    order: OrderOpt = None,
    picks: Annotated[
        str | None,
        typer.Option("--picks", help="Picks so far, team 0 | team 1: 'A,B | C'. Without it: interactive."),
    ] = None,
    bans: Annotated[str | None, typer.Option("--bans", help="Banned heroes: 'A,B'.")] = None,
    first: FirstOpt = 0,
    mode: ModeOpt = "minimax",
    top: Annotated[int, typer.Option("--top", help="Alternatives shown.")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Suggest the next pick: its value, and the best alternatives. One-shot with --picks, else interactive
    (asks for each opponent pick; Tab completes hero names)."""
    from fivectl.draft.search import state_from_names

    tab, drafter = _drafter(table, order, first, mode)
    state = state_from_names(picks, bans, tab.team_size)
    if picks is not None:
        advice = drafter.advise(state, top)
        if as_json:
            print_json(_advice_dict(advice, state))
        else:
            _show(advice)
        return
    drafter.check(state)
    _interactive(drafter, state, top, as_json)


def _show(advice) -> None:
    alts = ", ".join(f"{h} {v:.3f}" for h, v in advice.alternatives)
    out_console.print(
        f"team {advice.team} picks [bold]{advice.pick}[/]: win probability {advice.win_prob:.3f} (alternatives: {alts})"
    )


def _interactive(drafter, state, top: int, as_json: bool) -> None:
    from fivectl.sim import HERO_NAMES, hero_id

    _complete_names([HERO_NAMES[int(h)] for h in drafter.space.pool])
    mine = int(drafter.turns[len(state.teams[0]) + len(state.teams[1])])
    out_console.print(f"you draft for team {mine}; empty input accepts the suggestion, 'q' quits", highlight=False)
    while len(state.teams[0]) + len(state.teams[1]) < len(drafter.turns):
        advice = drafter.advise(state, top)
        print_json(_advice_dict(advice, state)) if as_json else _show(advice)
        who = "your" if advice.team == mine else "opponent's"
        answer = typer.prompt(f"{who} pick (team {advice.team})", default="", show_default=False).strip()
        if answer.lower() in ("q", "quit"):
            return
        try:
            hero = hero_id(answer) if answer else hero_id(advice.pick)
            state.teams[advice.team].append(hero)
            drafter.check(state)
        except BadInput as e:
            if state.teams[advice.team] and state.teams[advice.team][-1] == hero:
                state.teams[advice.team].pop()
            err_console.print(f"[bold red]error:[/] {e}", highlight=False)
    v = drafter.value(state)
    out_console.print(f"final lineup: P(team 0 wins) {v:.3f}", highlight=False)


def _complete_names(names: list[str]) -> None:
    try:
        import readline
    except ImportError:  # pragma: no cover - no line editing on this platform
        return

    def complete(text: str, i: int):
        hits = [n for n in names if n.lower().startswith(text.lower())]
        return hits[i] if i < len(hits) else None

    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")


@app.command("simulate")
@handle_errors
def simulate(
    model: ModelArg,
    table: Annotated[Path, typer.Option("--table", help="The model's draft table.")],
    games: Annotated[int, typer.Option("--games", "-n", help="Games; the drafting side alternates teams.")] = 400,
    against: Annotated[str, typer.Option("--against", help="random or greedy (best one-step value) drafter.")] = "random",
    order: OrderOpt = None,
    mode: ModeOpt = "minimax",
    seed: Annotated[int, typer.Option("--seed")] = 0,
    batch: Annotated[int, typer.Option("--batch", help="Games simulated at once.")] = 32,
    as_json: JsonOpt = False,
) -> None:
    """Play games where one side drafts with the table, the other randomly or greedily, the same agent playing
    both; report the drafting side's win rate (95% Wilson interval) and the table's prediction for them."""
    from fivectl.draft.play import simulate as run_simulate
    from fivectl.draft.table import check_table_matches

    tab, drafter = _drafter(table, order, 0, mode)
    m = _model(model)
    check_table_matches(tab, m)
    with _progress("playing") as bar:
        task = bar.add_task("games", total=games)
        r = run_simulate(m, tab, drafter, games, against, mode, seed, batch,
                         progress=lambda done, total: bar.update(task, completed=done))  # fmt: skip
    if as_json:
        print_json(r.to_dict())
        return
    lo, hi = r.drafting_win_rate_ci95
    out_console.print(
        f"{r.games} games against a {r.against} drafter ({r.mode}): drafting side win rate "
        f"{r.drafting_win_rate:.3f} (95% CI {lo:.3f}-{hi:.3f}; {r.wins}-{r.losses}-{r.draws}); "
        f"table predicted {r.predicted_win_rate:.3f}",
        highlight=False,
    )


@app.command("calibrate")
@handle_errors
def calibrate(
    model: ModelArg,
    games: Annotated[int, typer.Option("--games", "-n", help="Games with random lineups.")] = 400,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a reliability diagram (PNG).")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    batch: Annotated[int, typer.Option("--batch", help="Games simulated at once.")] = 32,
    as_json: JsonOpt = False,
) -> None:
    """Compare the first-frame win probability of random lineups with the games' outcomes: Brier score, the
    base-rate Brier score and a reliability diagram."""
    from fivectl.draft.play import calibrate as run_calibrate

    if plot is not None and plot.suffix.lower() != ".png":
        raise BadInput(f"--plot {plot}: must end in .png")
    m = _model(model)
    with _progress("playing") as bar:
        task = bar.add_task("games", total=games)
        r = run_calibrate(m, games, plot, seed, batch,
                          progress=lambda done, total: bar.update(task, completed=done))  # fmt: skip
    if as_json:
        print_json(r.to_dict())
        return
    out_console.print(
        f"{r.games} games: Brier {r.brier:.4f}, base-rate Brier {r.base_rate_brier:.4f}; team 0 won "
        f"{r.team0_win_rate:.3f}, predicted {r.mean_predicted:.3f}" + (f"; plot {r.plot}" if r.plot else ""),
        highlight=False,
    )
    rho = "n/a" if r.hero_rank_correlation is None else f"{r.hero_rank_correlation:+.2f}"
    out_console.print(
        f"heroes: win rates spread {r.hero_spread:.3f} (coin flips alone: {r.hero_spread_chance:.3f}); "
        f"rank correlation with the predicted {rho}",
        highlight=False,
    )
