"""The live view of a training run: the log line on a non-terminal, the panel's rows."""

from __future__ import annotations

import io

from rich.console import Console

from fivectl.runtime.live import LiveView


def test_a_mix_of_bot_levels_shows_each_levels_win_rate_after_the_rate_against_all_bots():
    out = io.StringIO()
    metrics = {"version": 3, "bot_win_rate_recent": 0.5, "bot_win_rate_recent_passive": 1.0,
               "bot_win_rate_recent_easy": 0.25, "pool_size": 2}  # fmt: skip
    with LiveView("run", console=Console(file=out, force_terminal=False, width=200), log_every_s=0) as view:
        view.update(metrics)
    line = out.getvalue().strip()
    assert line.startswith("[fivectl] version=3")
    assert "bot_win_rate_recent=0.500 bot_win_rate_recent_easy=0.250 bot_win_rate_recent_passive=1.000 pool_size=2" in line

    panel = io.StringIO()
    Console(file=panel, width=80).print(view._render(metrics))
    rows = [r for r in panel.getvalue().splitlines() if "vs bot" in r]
    assert ["win rate vs bots" in rows[0], "vs bot:easy" in rows[1], "vs bot:passive" in rows[2]] == [True] * 3
    assert "0.250" in rows[1] and "1.000" in rows[2]
