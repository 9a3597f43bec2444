"""The draft table: lineup numbering, values equal to direct model calls, resume after an interruption or a
kill -9 without recomputing finished chunks, and tables that do not fit are refused without writing."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import zarr

from fivectl.draft.lineups import LineupSpace
from fivectl.draft.model import first_frame_game, has_enemy_lineup, load_draft_model, require_enemy_lineup
from fivectl.draft.search import Drafter, DraftState, parse_order
from fivectl.draft.table import check_table_matches, lineup_values, open_table, precompute
from fivectl.errors import BadInput
from fivectl.schema import load_schema
from fivectl.sim import MobaEnv


@pytest.mark.parametrize(("pool", "k", "size"), [(range(17), 1, 272), (range(6), 2, 90), ([1, 4, 6, 9, 12], 2, 30)])
def test_every_lineup_once_and_index_inverts_lineups(pool, k, size):
    space = LineupSpace(pool, k)
    assert space.size == size
    lineups = space.lineups(0, size)
    assert lineups.shape == (size, 2, k)
    assert set(np.unique(lineups)) <= set(pool)
    assert all(len(set(row.ravel())) == 2 * k for row in lineups)  # disjoint teams
    assert len({(tuple(r[0]), tuple(r[1])) for r in lineups}) == size  # every lineup once
    np.testing.assert_array_equal(space.index(lineups), np.arange(size))
    np.testing.assert_array_equal(space.lineups(7, 11), lineups[7:11])


def test_five_v_five_has_the_papers_number_of_lineups():
    space = LineupSpace(range(17), 5)
    assert space.size == math.comb(17, 5) * math.comb(12, 5) == 4_900_896
    sample = np.array([0, 1, 123_456, 4_900_895])
    rows = np.concatenate([space.lineups(int(i), int(i) + 1) for i in sample])
    np.testing.assert_array_equal(space.index(rows), sample)


def direct_p_team0(model, lineup: np.ndarray) -> float:
    """One game with this lineup, its first observation through ``net.act`` with a zero state."""
    env = MobaEnv(first_frame_game(model.game), 1, 0, model.schema)
    env.set_lineups(lineup[None])
    obs = env.reset()
    k = model.team_size
    flat = {key: torch.from_numpy(np.ascontiguousarray(v[0])) for key, v in obs.items()}
    win = model.net.act(flat, model.net.initial_state(2 * k), torch.ones(2 * k, dtype=torch.bool)).win_prob
    per_team = win.double().numpy().reshape(2, k).mean(axis=1)
    return 0.5 * (per_team[0] + 1.0 - per_team[1])


def test_table_values_equal_direct_model_calls_on_a_sample(tmp_path, run2v2):
    model = load_draft_model(f"{run2v2.path}@latest")
    report = precompute(model, tmp_path / "t.zarr", chunk=4096, batch=1000)
    assert report.complete and report.lineups == math.comb(17, 2) * math.comb(15, 2)
    table = open_table(tmp_path / "t.zarr")
    assert (table.attrs["game"], table.attrs["model_version"], table.attrs["schema_version"]) == ("2v2", 3, 3)
    rng = np.random.default_rng(0)
    for i in rng.choice(report.lineups, 6, replace=False):
        lineup = table.space.lineups(int(i), int(i) + 1)
        assert table.values[i] == pytest.approx(direct_p_team0(model, lineup[0]), abs=2e-6)
        assert lineup_values(table, lineup)[0] == table.values[i]
    assert table.values.std() > 1e-4  # lineups are told apart


def test_a_finished_table_stores_the_solved_draft_and_advice_from_it_equals_a_fresh_search(tmp_path, run2v2):
    model = load_draft_model(f"{run2v2.path}@latest")
    precompute(model, tmp_path / "t.zarr", chunk=4096, batch=1000)
    table = open_table(tmp_path / "t.zarr")
    for first in (0, 1):
        cached = Drafter(table, parse_order("1-2-1", 2), first)
        assert cached.cache is not None and not np.isnan(cached.cache).any()
        fresh = Drafter(table, parse_order("1-2-1", 2), first)
        fresh.cache = None
        for picks in ([], [4], [4, 9], [4, 9, 12]):
            teams = ([], [])
            for hero, team in zip(picks, cached.turns, strict=False):
                teams[team].append(hero)
            a, b = cached.advise(DraftState(teams, [])), fresh.advise(DraftState(teams, []))
            assert (a.pick, a.value, a.alternatives) == (b.pick, b.value, b.alternatives)
    assert Drafter(table, parse_order("2-2", 2)).cache is None  # another order: searched afresh


class Interrupt(Exception):
    pass


def test_an_interrupted_precompute_resumes_without_recomputing_finished_chunks(tmp_path, run1v1):
    model = load_draft_model(f"{run1v1.path}@3")
    out = tmp_path / "t.zarr"

    def stop_in_chunk_three(done, total):
        if done > 2 * 64:
            raise Interrupt

    with pytest.raises(Interrupt):
        precompute(model, out, chunk=64, batch=16, progress=stop_in_chunk_three)
    assert zarr.open_group(str(out))["done"][:].tolist() == [1, 1, 0, 0, 0]
    with pytest.raises(BadInput, match="incomplete"):
        open_table(out)
    report = precompute(model, out, chunk=64, batch=16)
    assert (report.chunks_skipped, report.chunks_computed, report.complete) == (2, 3, True)
    fresh = precompute(model, tmp_path / "fresh.zarr", chunk=64, batch=16)
    assert fresh.chunks_computed == 5
    np.testing.assert_array_equal(open_table(out).values, open_table(tmp_path / "fresh.zarr").values)


def test_resume_after_kill_9_gives_the_same_table(tmp_path, run1v1):
    spec, out, ref = f"{run1v1.path}@3", tmp_path / "t.zarr", tmp_path / "ref.zarr"
    args = [sys.executable, "-m", "fivectl.cli.main", "draft", "precompute", spec, "--chunk", "8", "--batch", "8"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([*args, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        try:
            if zarr.open_group(str(out), mode="r")["done"][:].sum() >= 3:
                break
        except Exception:  # noqa: BLE001 - the store is still being created
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = int(zarr.open_group(str(out), mode="r")["done"][:].sum())
    result = subprocess.run([*args, "--out", str(out), "--json"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert f'"chunks_skipped": {done_before}' in result.stdout
    subprocess.run([*args, "--out", str(ref)], env=env, check=True, capture_output=True)
    np.testing.assert_array_equal(open_table(out).values, open_table(ref).values)


def test_a_table_of_another_model_or_game_is_refused_and_left_alone(tmp_path, run1v1, run2v2):
    m1 = load_draft_model(f"{run1v1.path}@3")
    m2 = load_draft_model(f"{run2v2.path}@3")
    out = tmp_path / "t.zarr"
    precompute(m1, out, chunk=64, batch=64)
    before = open_table(out).values.copy()
    with pytest.raises(BadInput, match="exists with another table"):
        precompute(m2, out)
    np.testing.assert_array_equal(open_table(out).values, before)
    with pytest.raises(BadInput, match="table of a 1v1 game"):
        check_table_matches(open_table(out), m2)
    with pytest.raises(BadInput, match="not a draft table"):
        open_table(tmp_path / "missing.zarr")


def test_enemy_lineup_requirement_names_the_surgery(run1v1, run_v2):
    require_enemy_lineup(load_draft_model(f"{run1v1.path}@3"))  # v3: fine
    model = load_draft_model(f"{run_v2.path}@3")
    assert not has_enemy_lineup(load_schema(2)) and has_enemy_lineup(load_schema(3))
    with pytest.raises(BadInput, match="model without the enemy lineup in its schema.*surgery add-obs"):
        require_enemy_lineup(model)
