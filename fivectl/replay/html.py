"""``replay export --html``: one self-contained page (data and code inline, nothing fetched) that plays a game.

The page (``viewer.html``, filled in here) draws the map on a canvas and animates it (play/pause, seek, speed),
plots each team's predicted win probability with a cursor, shows each hero's objective predictions and state, a
timeline of kills and buildings, and details of the unit under the mouse. The frames travel as base64 typed arrays
(positions as int16, HP fractions as uint8, ...) so a 20-minute 5v5 game stays a few MB.

Hooks for scripts and tests: ``page.html#t=150`` opens paused at 150 s of game time; ``#bench`` draws every frame
once and writes the mean draw time per frame to ``#frame-ms``. ``#wp0`` / ``#wp1`` show the win probability each
team's policy predicts at the shown row (``#row``), formatted with three decimals.
"""

from __future__ import annotations

import base64
import json
from importlib import resources
from pathlib import Path

import numpy as np

from fivectl.replay.events import UNIT_NAMES, find_events, hero_stats, team_win_prob
from fivectl.sim import BLOCKS, CAMPS, LANE_ORDER, LANE_POINTS, MAP_SIZE
from fivectl.store.atomic import write_text_atomic
from fivectl.store.replay import Replay

DATA_MARK = "/*__REPLAY_DATA__*/"


def _b64(values: np.ndarray, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def page_data(replay: Replay) -> dict:
    """Everything the page shows, as JSON-ready values (arrays as base64 little-endian typed arrays)."""
    a = replay.arrays
    heroes = int(replay.header["heroes"])
    events = find_events(replay)
    with np.errstate(invalid="ignore", divide="ignore"):
        hp_frac = np.where(a["max_hp"] > 0, a["hp"] / np.maximum(a["max_hp"], 1e-6), 0.0)
    lanes = LANE_ORDER[int(replay.header["game"]["lanes"])]
    return {
        "header": {
            k: replay.header.get(k) for k in ("agents", "lineup", "team_size", "heroes", "objectives")
        },
        "primaryActions": replay.header.get("primary_actions", []),
        "result": replay.result,
        "fps": replay.fps,
        "rows": replay.rows,
        "units": int(replay.header["units"]),
        "map": {
            "size": MAP_SIZE,
            "lanes": [LANE_POINTS[name].tolist() for name in lanes],
            "blocks": BLOCKS.tolist(),
            "camps": CAMPS[:, :2].tolist(),
        },
        "arrays": {
            "tick": _b64(a["tick"], "<i4"),
            "x": _b64(np.round(a["x"]), "<i2"),
            "y": _b64(np.round(a["y"]), "<i2"),
            "hpFrac": _b64(np.round(np.clip(hp_frac, 0, 1) * 255), "u1"),
            "hp": _b64(np.round(np.clip(a["hp"], 0, 65535)), "<u2"),
            "maxHp": _b64(np.round(np.clip(a["max_hp"], 0, 65535)), "<u2"),
            "alive": _b64(a["alive"], "u1"),
            "team": _b64(a["team"], "u1"),
            "utype": _b64(a["utype"], "u1"),
            "target": _b64(a["target"], "<i2"),
            "level": _b64(a["level"][:, :heroes], "u1"),
            "gold": _b64(a["gold"], "<f4"),
            "kills": _b64(a["kills"], "<i2"),
            "deaths": _b64(a["deaths"], "<i2"),
            "lastHits": _b64(a["last_hits"], "<i2"),
            "action": _b64(a["action"][:, :, 0], "<i2"),
            "value": _b64(a["value"], "<f4"),
            "winProb": _b64(a["win_prob"], "<f4"),
            "teamWinProb": _b64(team_win_prob(replay), "<f4"),
            "objectives": _b64(a["objectives"], "<f4"),
        },
        "events": [e.to_dict() for e in events],
        "stats": hero_stats(replay, events),
        "unitNames": {str(k): v for k, v in UNIT_NAMES.items()},
    }


def render_page(replay: Replay) -> str:
    template = resources.files("fivectl.replay").joinpath("viewer.html").read_text(encoding="utf-8")
    # "</" inside a script element would end it early
    payload = json.dumps(page_data(replay), separators=(",", ":")).replace("</", "<\\/")
    title = " vs ".join(replay.header.get("agents") or []) or replay.path.name
    return template.replace(DATA_MARK, payload).replace("__TITLE__", _escape(f"fivectl replay: {title}"))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def export_html(replay: Replay, out: str | Path) -> Path:
    out = Path(out)
    write_text_atomic(out, render_page(replay))
    return out
