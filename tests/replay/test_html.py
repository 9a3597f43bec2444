"""The exported page in a real browser: headless Chromium opens it at a game time, and the page shows that
time's recorded win probability, and draws the map (the screenshot is not blank)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import typer
from shared_helpers import require_optional
from typer.testing import CliRunner

from fivectl.cli.replay import app as replay_app
from fivectl.replay import load_replay
from fivectl.replay.events import team_win_prob

runner = CliRunner()
cli = typer.Typer()
cli.add_typer(replay_app, name="replay")

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--window-size=1240,900", "--virtual-time-budget=4000",
)  # fmt: skip
MAP_BOX = (42, 682, 12, 652)  # rows, then columns, of the map canvas in the 1240x900 screenshot


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    require_optional("chromium", path is not None, "apt-get install chromium; .ci/run installs it")
    return path


def run_chromium(url: str, profile: Path, *args: str) -> str:
    cmd = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def element_text(dom: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>([^<]*)<', dom)
    assert match, f"#{element_id} not in the page"
    return match.group(1)


def test_the_exported_page_seeks_shows_the_recorded_win_probability_and_draws_the_map(recorded, tmp_path):
    chromium()  # skips (or fails where FIVECTL_REQUIRE lists it) before any work when there is no browser
    path = recorded.files[1]
    page = tmp_path / "game.html"
    result = runner.invoke(cli, ["replay", "export", str(path), "--html", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    # one self-contained file: no script, style or image is fetched
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html)
    assert "http://" not in html and "https://" not in html

    replay = load_replay(path)
    seconds = 13.5
    row = replay.row_at(seconds)
    url = f"{page.as_uri()}#t={seconds}"
    dom = run_chromium(url, tmp_path / "profile-dom", "--dump-dom")
    assert int(element_text(dom, "row")) == row
    wp = team_win_prob(replay).astype(np.float32)[row]
    assert not np.isnan(wp).any()
    assert element_text(dom, "wp0") == f"{float(wp[0]):.3f}"
    assert element_text(dom, "wp1") == f"{float(wp[1]):.3f}"
    assert element_text(dom, "time").startswith("0:13 / 0:20")
    lineup = replay.header["lineup"]
    assert all(name in dom for name in lineup)  # the hero table

    shot = tmp_path / "shot.png"
    run_chromium(url, tmp_path / "profile-shot", f"--screenshot={shot}")
    image = mpimg.imread(shot)[..., :3]
    top, bottom, left, right = MAP_BOX
    board = (image[top:bottom, left:right] * 255).round().astype(np.int64)
    colours = np.unique(board.reshape(-1, 3) @ np.array([65536, 256, 1]))
    assert len(colours) > 50, "the map looks blank"

    def share(rgb: tuple[int, int, int]) -> float:
        return float((np.abs(board - np.array(rgb)).sum(axis=-1) < 30).mean())

    assert share((0x5F, 0xD0, 0x68)) > 0.002 and share((0xF0, 0x60, 0x5A)) > 0.002  # both teams' buildings
    assert share((0x6B, 0x5A, 0x3C)) > 0.01  # the lane
