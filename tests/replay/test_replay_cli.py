"""``fivectl replay list|show|export|stats|verify`` on recorded games, and bad input: one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import typer
from shared_helpers import assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.replay import app as replay_app
from fivectl.replay import load_replay
from fivectl.replay.events import find_events, hero_stats, team_win_prob
from fivectl.replay.terminal import clock
from fivectl.sim import UT_HERO, UT_MELEE, UT_TOWER
from fivectl.store.replay import HEADER_KEY, RESULT_KEY, Replay

runner = CliRunner()
cli = typer.Typer()
cli.add_typer(replay_app, name="replay")


def invoke(*args: str):
    return runner.invoke(cli, ["replay", *map(str, args)], catch_exceptions=False)



def test_list_shows_every_game_with_its_agents_result_and_length(recorded):
    result = invoke("list", recorded.directory, "--json")
    assert result.exit_code == 0, result.output
    games = json.loads(result.output)
    assert [g["file"] for g in games] == [p.name for p in recorded.files]
    for game, path in zip(games, recorded.files, strict=True):
        replay = load_replay(path)
        assert game["agents"] == ["random", "random"]
        assert game["steps"] == replay.steps
        assert game["winner"] == {0: "radiant", 1: "dire"}.get(replay.result["winner"], "draw")
    table = invoke("list", recorded.directory)
    assert table.exit_code == 0 and recorded.files[0].name in table.output and "0:20" in table.output


def test_show_at_renders_that_frame_and_exits(recorded):
    path = recorded.files[0]
    replay = load_replay(path)
    row = replay.row_at(12.0)
    result = invoke("show", path, "--at", "0:12", "--width", "60")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "0:12" in out and "0:20" in out  # time bar: now and the game's length
    expected = f"{team_win_prob(replay)[row, 0]:5.3f}"
    assert f"radiant win {expected}" in out
    for h, name in enumerate(replay.header["lineup"]):
        assert name in out
        if replay.arrays["alive"][row, h]:
            assert f"{replay.arrays['hp'][row, h]:.0f}/{replay.arrays['max_hp'][row, h]:.0f}" in out
    assert "A" in out and "B" in out  # ancients and barracks on the map
    later = invoke("show", path, "--at", "18")
    assert later.exit_code == 0 and "0:18" in later.output


def test_stats_json_matches_the_final_frame(recorded):
    path = recorded.files[2]
    replay = load_replay(path)
    result = invoke("stats", path, "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert [h["hero"] for h in stats["heroes"]] == replay.header["lineup"]
    for h, row in enumerate(stats["heroes"]):
        assert row["last_hits"] == int(replay.arrays["last_hits"][-1, h])
        assert row["gold"] == pytest.approx(float(replay.arrays["gold"][-1, h]), abs=0.05)
        assert row["level"] == int(replay.arrays["level"][-1, h])
    for team in stats["teams"]:
        assert set(team["targets"]) == {"heroes", "creeps", "buildings", "neutrals"}
        assert 0.0 <= sum(team["targets"].values()) <= 1.0
    table = invoke("stats", path)
    assert table.exit_code == 0 and replay.header["lineup"][0][:5] in table.output
    assert "heroes' time with a target" in table.output


def synthetic_replay(rows: int = 6) -> Replay:
    """A 1v1 by hand: the dire hero dies at row 3 with the radiant hero next to it (credited with the kill),
    and a dire tower falls at row 5 with the radiant hero in range."""
    units = 4  # two heroes, a tower, a creep
    arrays = {
        "tick": np.arange(rows, dtype=np.int32) * 4,
        "utype": np.tile(np.array([UT_HERO, UT_HERO, UT_TOWER, UT_MELEE], np.int8), (rows, 1)),
        "team": np.tile(np.array([0, 1, 1, 0], np.int8), (rows, 1)),
        "alive": np.ones((rows, units), np.int8),
        "x": np.tile(np.array([1000, 1500, 2000, 9000], np.float32), (rows, 1)),
        "y": np.full((rows, units), 1000, np.float32),
        "kills": np.zeros((rows, 2), np.int16),
        "deaths": np.zeros((rows, 2), np.int16),
        "last_hits": np.zeros((rows, 2), np.int16),
        "denies": np.zeros((rows, 2), np.int16),
        "gold": np.zeros((rows, 2), np.float32),
        "networth": np.zeros((rows, 2), np.float32),
        "level": np.ones((rows, units), np.int8),
    }
    arrays["target"] = np.full((rows, units), -1, np.int16)
    arrays["target"][:2, 0] = 1  # Alpha at Beta, then at the tower, then at nothing
    arrays["target"][2:5, 0] = 2
    arrays["target"][:, 1] = 3  # Beta at the creep, alive or not
    arrays["alive"][3:, 1] = 0
    arrays["kills"][3:, 0] = 1
    arrays["deaths"][3:, 1] = 1
    arrays["alive"][5:, 2] = 0
    header = {"lineup": ["Alpha", "Beta"], "team_size": 1, "heroes": 2, "game": {"fps": 30}}
    return Replay(Path("synthetic.arrow"), header, {"winner": 0, "seconds": 0.7, "steps": rows - 1}, arrays)


def test_events_credit_kills_and_buildings_to_the_heroes_nearby():
    replay = synthetic_replay()
    events = find_events(replay)
    assert [(e.kind, e.row, e.unit) for e in events] == [("kill", 3, 1), ("building", 5, 2)]
    assert events[0].killer == 0 and "Beta (dire) killed by Alpha (radiant)" in events[0].text
    assert events[1].helpers == [0] and "dire tower destroyed" in events[1].text
    stats = hero_stats(replay, events)
    alpha, beta = stats["heroes"]
    assert (alpha["kills"], alpha["deaths"], alpha["buildings"]) == (1, 0, 1)
    assert (beta["kills"], beta["deaths"]) == (0, 1)
    assert stats["teams"][0]["buildings_destroyed"] == 1 and stats["winner"] == "radiant"
    # Shares of the living frames: Alpha lives all 6, Beta the first 3 (its target after death does not count).
    assert stats["teams"][0]["targets"] == {
        "heroes": round(2 / 6, 4),
        "creeps": 0.0,
        "buildings": 0.5,
        "neutrals": 0.0,
    }
    assert stats["teams"][1]["targets"] == {"heroes": 0.0, "creeps": 1.0, "buildings": 0.0, "neutrals": 0.0}
    assert clock(events[1].seconds) == "0:00"


def test_verify_cli_passes_on_a_recorded_game_and_fails_on_a_tampered_one(recorded, tmp_path):
    ok = invoke("verify", recorded.files[0])
    assert ok.exit_code == 0 and "ok" in ok.output
    tampered = rewrite(recorded.files[0], tmp_path / "tampered.arrow", change=lambda t: move_hero(t, 30))
    bad = runner.invoke(cli, ["replay", "verify", str(tampered)])
    assert bad.exit_code == 1 and "step 30" in bad.output


# ---------------------------------------------------------------- bad input


def rewrite(src: Path, dst: Path, header=None, change=None) -> Path:
    """A copy of a replay with its header updated and/or its table changed, written like the recorder does."""
    reader = pa.ipc.open_file(str(src))
    meta = json.loads(reader.schema.metadata[HEADER_KEY])
    meta.update(header or {})
    _, last_meta = reader.get_batch_with_custom_metadata(reader.num_record_batches - 1)
    table = reader.read_all()
    table = change(table) if change else table
    schema = table.schema.with_metadata({HEADER_KEY: json.dumps(meta).encode()})
    with pa.ipc.new_file(str(dst), schema) as writer:
        writer.write_batch(
            table.cast(schema).combine_chunks().to_batches()[0],
            custom_metadata={RESULT_KEY: last_meta[RESULT_KEY]},
        )
    return dst


def move_hero(table: pa.Table, row: int) -> pa.Table:
    x = table.column("x").combine_chunks()
    values = x.flatten().to_numpy().copy()
    values[row * x.type.list_size] += 3.0
    return table.set_column(
        table.schema.get_field_index("x"),
        "x",
        pa.FixedSizeListArray.from_arrays(pa.array(values), x.type.list_size),
    )


@pytest.mark.parametrize("command", ["show", "stats", "export", "verify"])
def test_bad_files_are_one_line_exit_2(recorded, tmp_path, command):
    src = recorded.files[0]
    data = src.read_bytes()
    truncated = tmp_path / "truncated.arrow"
    truncated.write_bytes(data[: len(data) // 2])
    corrupt = tmp_path / "corrupt.arrow"
    corrupt.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    other_format = rewrite(src, tmp_path / "format.arrow", header={"format_version": 99})
    other_schema = rewrite(src, tmp_path / "schema.arrow", header={"schema_version": 99})
    extra = ["--html", str(tmp_path / "out.html")] if command == "export" else []
    for path, needle in (
        (truncated, "truncated or corrupt"),
        (corrupt, "truncated or corrupt"),
        (other_format, "replay format v99"),
        (other_schema, "observation schema v99"),
        (tmp_path / "missing.arrow", "no such replay"),
        (tmp_path, "directory"),
    ):
        assert_bad_input(runner.invoke(cli, ["replay", command, str(path), *extra]), needle)
    assert not (tmp_path / "out.html").exists()


def test_list_of_a_directory_without_replays_and_bad_options(recorded, tmp_path):
    assert_bad_input(invoke("list", tmp_path), "no replays")
    assert_bad_input(invoke("list", tmp_path / "nope"), "no such directory")
    shutil.copy(recorded.files[0], tmp_path / "a.arrow")
    (tmp_path / "b.arrow").write_bytes(b"not arrow")
    assert_bad_input(invoke("list", tmp_path), "b.arrow", "truncated or corrupt")
    assert_bad_input(invoke("show", recorded.files[0], "--at", "two minutes"), "--at")
