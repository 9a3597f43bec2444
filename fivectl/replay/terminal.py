"""``replay show``: one frame of a recorded game as rich renderables, and a keyboard-driven player around them.

The map is a character grid (the 12000-unit square map, north up): buildings as letters (``A`` ancient, ``B``
barracks, ``1``-``4`` towers by tier), creeps as dots, neutrals as ``n``, heroes as the first letter of their
name in capitals; team colours green (radiant) and red (dire). Below it: the time bar, each team's predicted win
probability as a sparkline over the whole game with the current time marked, the heroes' state and the recent
events.
"""

from __future__ import annotations

import functools

import numpy as np
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from fivectl.replay.events import TEAM_NAMES, Event, hero_team, team_win_prob
from fivectl.sim import (
    LANE_ORDER,
    LANE_POINTS,
    MAP_SIZE,
    UT_ANCIENT,
    UT_BARRACKS,
    UT_BOSS,
    UT_HERO,
    UT_NEUTRAL,
    UT_TOWER,
)
from fivectl.store.replay import NO_ACTION, Replay

TEAM_STYLES = ("bold green", "bold red", "yellow")
SPARK = "▁▂▃▄▅▆▇█"
TOWER_CHARS = {1: "1", 2: "2", 3: "3", 4: "4"}


def clock(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def parse_clock(text: str) -> float:
    """'2:30', '150' or '150.5' -> seconds; ValueError otherwise."""
    parts = text.strip().split(":")
    if len(parts) == 1:
        value = float(parts[0])
    elif len(parts) == 2:
        value = int(parts[0]) * 60 + float(parts[1])
    else:
        raise ValueError(text)
    if value < 0:
        raise ValueError(text)
    return value


def map_grid(replay: Replay, row: int, width: int = 60, height: int = 30) -> Text:
    """The map at ``row`` as a coloured character grid (later units drawn over earlier: heroes on top)."""
    a = replay.arrays
    heroes = int(replay.header["heroes"])
    grid = [[" "] * width for _ in range(height)]
    style = [[""] * width for _ in range(height)]
    _draw_lanes(replay, grid, style, width, height)
    alive = a["alive"][row] == 1
    order = np.argsort(a["utype"][row] == UT_HERO, kind="stable")  # heroes last, on top
    for u in order[alive[order]]:
        col = int(np.clip(a["x"][row, u] / MAP_SIZE * width, 0, width - 1))
        line = int(np.clip((1.0 - a["y"][row, u] / MAP_SIZE) * height, 0, height - 1))
        grid[line][col] = _unit_char(replay, row, int(u), heroes)
        style[line][col] = TEAM_STYLES[min(int(a["team"][row, u]), 2)]
    text = Text()
    for line in range(height):
        for col in range(width):
            text.append(grid[line][col], style=style[line][col] or None)
        text.append("\n")
    return text


def _draw_lanes(replay: Replay, grid, style, width: int, height: int) -> None:
    lanes = LANE_ORDER[int(replay.header["game"]["lanes"])]
    for name in lanes:
        pts = LANE_POINTS[name]
        for p0, p1 in zip(pts[:-1], pts[1:], strict=True):
            for f in np.linspace(0.0, 1.0, 2 * max(width, height)):
                x, y = p0 + (p1 - p0) * f
                col = int(np.clip(x / MAP_SIZE * width, 0, width - 1))
                line = int(np.clip((1.0 - y / MAP_SIZE) * height, 0, height - 1))
                grid[line][col] = "·"
                style[line][col] = "grey35"


def _unit_char(replay: Replay, row: int, u: int, heroes: int) -> str:
    a = replay.arrays
    utype = int(a["utype"][row, u])
    if u < heroes:
        return replay.header["lineup"][u][0].upper()
    if utype == UT_TOWER:
        tier = _tier(replay, u)
        return TOWER_CHARS.get(tier, "T")
    return {UT_BARRACKS: "B", UT_ANCIENT: "A", UT_NEUTRAL: "n", UT_BOSS: "R"}.get(utype, "•")


def _tier(replay: Replay, u: int) -> int:
    """A tower's tier from its place in the building table (the layout is fixed per lane count)."""
    bld_start, tiers = _building_tiers(int(replay.header["team_size"]), int(replay.header["game"]["lanes"]))
    return int(tiers[u - bld_start])


@functools.cache
def _building_tiers(team_size: int, lanes: int) -> tuple[int, np.ndarray]:
    from fivectl.sim import build_layout

    layout = build_layout(team_size, lanes)
    return layout.bld_start, layout.b_tier


def sparkline(values: np.ndarray, width: int) -> str:
    """Values in [0, 1] (NaN: blank) resampled to ``width`` characters."""
    if len(values) == 0:
        return ""
    idx = np.linspace(0, len(values) - 1, width).round().astype(int)
    out = []
    for v in values[idx]:
        out.append(" " if np.isnan(v) else SPARK[int(np.clip(v, 0.0, 1.0) * (len(SPARK) - 1) + 0.5)])
    return "".join(out)


def time_bar(replay: Replay, row: int, width: int) -> Text:
    seconds = replay.seconds()
    frac = row / max(replay.rows - 1, 1)
    filled = int(round(frac * width))
    text = Text(f"{clock(seconds[row])} ", style="bold")
    text.append("━" * filled, style="cyan")
    text.append("─" * (width - filled), style="grey35")
    text.append(f" {clock(seconds[-1])}")
    return text


def win_prob_lines(replay: Replay, row: int, width: int) -> Text:
    wp = team_win_prob(replay)
    cursor = int(round(row / max(replay.rows - 1, 1) * (width - 1)))
    text = Text()
    for team in (0, 1):
        now = wp[row, team]
        label = "  n/a" if np.isnan(now) else f"{now:5.3f}"
        text.append(f"{TEAM_NAMES[team]:>8} win {label} ", style=TEAM_STYLES[team])
        line = sparkline(wp[:, team], width)
        text.append(line[:cursor])
        text.append(line[cursor] if cursor < len(line) else "", style="reverse")
        text.append(line[cursor + 1 :])
        text.append("\n")
    return text


def hero_table(replay: Replay, row: int) -> Table:
    a = replay.arrays
    primaries = replay.header.get("primary_actions", [])
    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("hero", "lvl", "HP", "K/D", "LH", "gold", "action", "value", "win"):
        table.add_column(column, justify="left" if column in ("hero", "action") else "right")
    for h in range(int(replay.header["heroes"])):
        action = int(a["action"][row, h, 0])
        name = "" if action == NO_ACTION else "hold" if action < 0 else _name(primaries, action)
        alive = a["alive"][row, h] == 1
        hp = f"{a['hp'][row, h]:.0f}/{a['max_hp'][row, h]:.0f}" if alive else "dead"
        value, win = a["value"][row, h], a["win_prob"][row, h]
        table.add_row(
            Text(replay.header["lineup"][h], style=TEAM_STYLES[hero_team(replay, h)]),
            str(int(a["level"][row, h])),
            hp,
            f"{int(a['kills'][row, h])}/{int(a['deaths'][row, h])}",
            str(int(a["last_hits"][row, h])),
            f"{a['gold'][row, h]:.0f}",
            name,
            "-" if np.isnan(value) else f"{value:+.2f}",
            "-" if np.isnan(win) else f"{win:.3f}",
        )
    return table


def _name(primaries: list[str], index: int) -> str:
    return primaries[index] if 0 <= index < len(primaries) else str(index)


def recent_events(events: list[Event], row: int, count: int = 5) -> Text:
    shown = [e for e in events if e.row <= row][-count:]
    text = Text()
    for e in shown:
        text.append(
            f"{clock(e.seconds):>6} {e.text}\n", style=TEAM_STYLES[1 - e.team] if e.team < 2 else None
        )
    if not shown:
        text.append("(no kills or buildings yet)\n", style="grey50")
    return text


def frame_view(replay: Replay, row: int, events: list[Event], width: int = 60, status: str = "") -> Panel:
    """Everything ``replay show`` draws for one row."""
    agents = replay.header.get("agents", [])
    title = " vs ".join(agents) if agents else replay.path.name
    height = max(12, width // 2)
    body = Group(
        map_grid(replay, row, width, height),
        time_bar(replay, row, width),
        win_prob_lines(replay, row, width),
        hero_table(replay, row),
        Text("events", style="bold"),
        recent_events(events, row),
        Text(status, style="grey50"),
    )
    return Panel(body, title=title, subtitle=replay.path.name, expand=False)


def play(replay: Replay, events: list[Event], console, start_row: int = 0) -> None:
    """Interactive player: space play/pause, left/right seek 10 s, up/down speed, home/end, q quits."""
    import select
    import sys
    import termios
    import time
    import tty

    from rich.live import Live

    step_s = replay.header["game"]["frameskip"] / replay.fps
    row, playing, speed = start_row, True, 1.0
    cursor = float(row)  # fractional row while playing
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        with Live(console=console, auto_refresh=False, screen=True) as live:
            last = time.perf_counter()
            while True:
                state = "playing" if playing else "paused"
                status = f"{state} x{speed:g}  [space] play/pause  [←/→] 10 s  [↑/↓] speed  [q] quit"
                live.update(frame_view(replay, row, events, status=status), refresh=True)
                ready, _, _ = select.select([sys.stdin], [], [], 0.05)
                key = sys.stdin.read(1) if ready else ""
                if key == "\x1b":
                    key += sys.stdin.read(2)
                if key in ("q", "Q"):
                    return
                jump = int(round(10.0 / step_s))
                moved, playing, speed = _apply_key(key, row, playing, speed, jump, replay.rows)
                cursor = float(moved) if moved != row else cursor
                now = time.perf_counter()
                if playing:
                    cursor = min(replay.rows - 1.0, cursor + (now - last) * speed / step_s)
                    playing = cursor < replay.rows - 1
                row = int(cursor)
                last = now
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _apply_key(
    key: str, row: int, playing: bool, speed: float, jump: int, rows: int
) -> tuple[int, bool, float]:
    if key == " ":
        playing = not playing
    elif key == "\x1b[C":
        row = min(rows - 1, row + jump)
    elif key == "\x1b[D":
        row = max(0, row - jump)
    elif key == "\x1b[A":
        speed = min(32.0, speed * 2)
    elif key == "\x1b[B":
        speed = max(0.25, speed / 2)
    elif key == "\x1b[H":
        row = 0
    elif key == "\x1b[F":
        row = rows - 1
    return row, playing, speed
