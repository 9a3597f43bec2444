"""What replays cost: recording overhead in ``evaluate match``, file size, and the HTML viewer's frame time.

    python benchmarks/replay.py --json                       # bots only
    python benchmarks/replay.py --run runs/qs --json         # the match with a trained policy as agent A

1. Recording overhead: the same match (A against bot:easy, 1v1 quickstart game) played with and without
   ``record=DIR``, alternated ``--repeats`` times in one process; games per second of each and their ratio.
2. Size: one 20-minute 5v5 game on three lanes (bot:medium against bot:easy) recorded; MB on disk.
3. HTML frame time: a 5-minute 1v1 game of the first part exported with ``replay export --html`` and drawn frame
   by frame in headless Chromium (``page.html#bench``: the mean draw time of up to 2000 frames, in ms).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1240,900", "--virtual-time-budget=60000",
)  # fmt: skip


def recording_overhead(agent: str, games: int, repeats: int, work: Path) -> dict:
    from fivectl.config import load_recipe
    from fivectl.evaluate import play_match
    from fivectl.evaluate.match import AgentPool

    recipe = load_recipe(Path(__file__).resolve().parents[1] / "recipes" / "quickstart.toml")
    pool = AgentPool()
    play_match(agent, "bot:easy", recipe.game, 2, seed=99, pool=pool)  # warm up: compile, load the checkpoint
    plain, recorded = [], []
    for r in range(repeats):
        for record in (False, True):
            out = work / f"rec{r}" if record else None
            tic = time.perf_counter()
            play_match(agent, "bot:easy", recipe.game, games, seed=r, batch=games, pool=pool, record=out)
            (recorded if record else plain).append(games / (time.perf_counter() - tic))
    files = sorted((work / "rec0").glob("*.arrow"))
    return {
        "agent": agent,
        "games": games,
        "repeats": repeats,
        "games_per_s_plain": round(sum(plain) / len(plain), 3),
        "games_per_s_recorded": round(sum(recorded) / len(recorded), 3),
        "recorded_over_plain": round(sum(recorded) / sum(plain), 3),
        "mean_replay_mb_5min_1v1": round(sum(p.stat().st_size for p in files) / len(files) / 1e6, 3),
        "example": str(files[0]),
    }


def five_v_five_size(work: Path, minutes: float) -> dict:
    from fivectl.config import GameConfig
    from fivectl.evaluate import play_match

    game = GameConfig(team_size=5, lanes=3, time_limit_s=60.0 * minutes)
    tic = time.perf_counter()
    play_match("bot:medium", "bot:easy", game, 1, seed=0, batch=1, record=work / "5v5")
    (path,) = sorted((work / "5v5").glob("*.arrow"))
    from fivectl.replay import replay_info

    _, result = replay_info(path)
    return {
        "game": f"5v5, 3 lanes, {minutes:g} min limit",
        "game_seconds": result["seconds"],
        "steps": result["steps"],
        "mb": round(path.stat().st_size / 1e6, 3),
        "wall_s": round(time.perf_counter() - tic, 1),
    }


def html_frame_time(replay_path: Path, work: Path) -> dict:
    from fivectl.replay import load_replay
    from fivectl.replay.html import export_html

    page = export_html(load_replay(replay_path), work / "game.html")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return {"error": "chromium not installed"}
    cmd = [
        chromium,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={work / 'profile'}",
        "--dump-dom",
        f"{page.as_uri()}#bench",
    ]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    match = re.search(r'data-bench="([0-9.]+)"', dom)
    return {
        "page_mb": round(page.stat().st_size / 1e6, 3),
        "frame_ms": float(match.group(1)) if match else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="a training run: its latest checkpoint plays agent A (default bot:medium)")
    ap.add_argument("--games", type=int, default=16, help="games per match (one batch)")
    ap.add_argument("--repeats", type=int, default=2, help="matches with and without recording each")
    ap.add_argument("--minutes", type=float, default=20.0, help="time limit of the 5v5 game")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    agent = f"{args.run}@latest" if args.run else "bot:medium"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        overhead = recording_overhead(agent, args.games, args.repeats, work)
        records = {
            "recording": overhead,
            "size_5v5": five_v_five_size(work, args.minutes),
            "html": html_frame_time(Path(overhead.pop("example")), work),
        }
    print(json.dumps(records, indent=1) if args.json else records)


if __name__ == "__main__":
    main()
