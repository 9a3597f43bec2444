"""``fivectl replay list|show|export|stats|verify``: recorded games (``--record DIR``, ``train.replay_every``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fivectl.cli.common import handle_errors, out_console, print_json
from fivectl.errors import BadInput, RunFailed

app = typer.Typer(
    help="Watch recorded games: list them, show them in the terminal, export a self-contained HTML page, "
    "per-hero stats, and re-simulate them (verify).",
    no_args_is_help=True,
)

FileArg = Annotated[Path, typer.Argument(help="A replay file (.arrow).", show_default=False)]


@app.command("list")
@handle_errors
def list_(
    directory: Annotated[
        Path, typer.Argument(help="A directory of replays (e.g. RUN/replays).", show_default=False)
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """The games of DIR: agents, result and length."""
    from fivectl.replay.events import TEAM_NAMES
    from fivectl.replay.load import replay_info
    from fivectl.replay.terminal import clock
    from fivectl.store.replay import list_replays

    rows = []
    for path in list_replays(directory):
        header, result = replay_info(path)
        winner = int(result["winner"])
        rows.append(
            {
                "file": path.name,
                "agents": header.get("agents", []),
                "versions": header.get("agent_versions", [None] * len(header.get("agents", []))),
                "lineup": header.get("lineup", []),
                "winner": TEAM_NAMES[winner] if winner in (0, 1) else "draw",
                "seconds": round(float(result["seconds"]), 2),
                "steps": int(result["steps"]),
            }
        )
    if as_json:
        print_json(rows)
        return
    table = Table(title=str(directory))
    for column in ("file", "radiant", "dire", "lineup", "winner", "length"):
        table.add_column(column)
    for r in rows:
        agents = [_short(spec, version) for spec, version in zip(r["agents"], r["versions"], strict=False)]
        agents += ["?", "?"]
        table.add_row(
            r["file"], agents[0], agents[1], ", ".join(r["lineup"]), r["winner"], clock(r["seconds"])
        )
    out_console.print(table)


def _short(spec: str, version: int | None) -> str:
    """``runs/qs@latest`` that played version 60 -> ``qs@60``; other agents as they are."""
    if "@" not in spec or version is None:
        return spec
    return f"{Path(spec.rpartition('@')[0]).name}@{version}"


@app.command("show")
@handle_errors
def show(
    file: FileArg,
    at: Annotated[
        str | None, typer.Option("--at", help="Render the frame at this game time (2:30 or 150) and exit.")
    ] = None,
    width: Annotated[int, typer.Option("--width", help="Map width in characters.")] = 60,
) -> None:
    """The game in the terminal: map, time bar, win-probability sparkline, heroes and events. Interactive on a
    terminal (space play/pause, arrows seek and change speed, q quits); with --at or without a terminal, one frame."""
    from fivectl.replay.events import find_events
    from fivectl.replay.load import load_replay
    from fivectl.replay.terminal import frame_view, parse_clock, play

    if width < 20:
        raise BadInput(f"--width: must be >= 20, got {width}")
    seconds = _parse_at(at, parse_clock)
    replay = load_replay(file)
    events = find_events(replay)
    row = replay.row_at(seconds) if seconds is not None else 0
    if at is not None or not (sys.stdin.isatty() and sys.stdout.isatty()):
        out_console.print(frame_view(replay, row, events, width))
        return
    play(replay, events, out_console, row)


def _parse_at(at: str | None, parse_clock) -> float | None:
    if at is None:
        return None
    try:
        return parse_clock(at)
    except ValueError:
        raise BadInput(f"--at: expected a game time like 2:30 or 150, got {at!r}") from None


@app.command("export")
@handle_errors
def export(
    file: FileArg,
    html: Annotated[Path, typer.Option("--html", help="The page to write (one self-contained file).")],
) -> None:
    """One HTML page that plays the game offline: animated map, win-probability curves, objective predictions,
    timeline of kills and buildings, unit details on hover."""
    from fivectl.replay.html import export_html
    from fivectl.replay.load import load_replay

    if html.is_dir():
        raise BadInput(f"--html: {html} is a directory")
    replay = load_replay(file)
    out = export_html(replay, html)
    out_console.print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


@app.command("stats")
@handle_errors
def stats(
    file: FileArg,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stats as JSON.")] = False,
) -> None:
    """Per-hero kills/deaths/assists, last hits, denies, gold, net worth and buildings taken part in; per team,
    the share of its heroes' time spent targeting heroes, creeps, buildings and neutrals."""
    from fivectl.replay.events import hero_stats
    from fivectl.replay.load import load_replay

    result = hero_stats(load_replay(file))
    if as_json:
        print_json(result)
        return
    table = Table(title=f"{Path(result['file']).name}: {result['winner']} won at {result['seconds']:.0f} s")
    columns = ("hero", "team", "K/D/A", "LH", "DN", "gold", "NW", "lvl", "bld")
    for column in columns:
        table.add_column(column, justify="left" if column in ("hero", "team") else "right")
    for h in result["heroes"]:
        kda = f"{h['kills']}/{h['deaths']}/{h['assists']}"
        table.add_row(
            h["hero"], h["team"], kda, str(h["last_hits"]), str(h["denies"]), f"{h['gold']:.0f}",
            f"{h['networth']:.0f}", str(h["level"]), str(h["buildings"]),
        )  # fmt: skip
    out_console.print(table)
    out_console.print(
        "LH last hits, DN denies, NW net worth, bld buildings destroyed with the hero near", style="dim"
    )
    for team in result["teams"]:
        targets = ", ".join(f"{kind} {share:.0%}" for kind, share in team["targets"].items())
        out_console.print(
            f"{team['team']}: {team['kills']} kills, {team['buildings_destroyed']} buildings destroyed;"
            f" heroes' time with a target: {targets}"
        )


@app.command("verify")
@handle_errors
def verify(file: FileArg) -> None:
    """Re-simulate the game from its random start state and recorded actions; exit 1 if a frame differs."""
    from fivectl.replay.load import load_replay
    from fivectl.replay.verify import verify_replay

    result = verify_replay(load_replay(file))
    if not result.ok:
        raise RunFailed(f"{file}: {result.message}")
    out_console.print(f"{file}: ok, {result.message}")
