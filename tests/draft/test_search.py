"""Pick advice on hand-made tables: minimax and expectimax agree with a brute-force search, the draft order and
bans are respected, and bad orders or picks are one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fivectl.draft.lineups import LineupSpace
from fivectl.draft.search import Drafter, DraftState, fill_memo, parse_order, solve, turn_teams
from fivectl.draft.table import DraftTable
from fivectl.errors import BadInput
from fivectl.sim import HERO_NAMES


def hand_table(pool, k: int, values: np.ndarray) -> DraftTable:
    attrs = {"pool": list(pool), "team_size": k, "game": f"{k}v{k}", "schema_version": 2}
    return DraftTable(Path("hand.zarr"), attrs, np.asarray(values, dtype=np.float32), np.ones(1, dtype=bool))


def test_minimax_on_a_three_hero_table():
    # Heroes 0, 1, 2 in a 1v1; P(team 0 wins) by (team 0's hero, team 1's hero):
    #   0 vs 1: 0.9, 0 vs 2: 0.2  -> picking 0 is worth 0.2 against a best reply (avg 0.55)
    #   1 vs 0: 0.6, 1 vs 2: 0.5  -> worth 0.5 (avg 0.55)
    #   2 vs 0: 0.4, 2 vs 1: 0.3  -> worth 0.3
    space = LineupSpace([0, 1, 2], 1)
    value = {(0, 1): 0.9, (0, 2): 0.2, (1, 0): 0.6, (1, 2): 0.5, (2, 0): 0.4, (2, 1): 0.3}
    values = [value[tuple(lineup[:, 0])] for lineup in space.lineups(0, space.size)]
    table = hand_table([0, 1, 2], 1, values)
    advice = Drafter(table, parse_order("1-1", 1)).advise(DraftState(([], []), []))
    assert (advice.team, advice.pick) == (0, HERO_NAMES[1])
    assert advice.win_prob == pytest.approx(0.5)
    assert [h for h, _ in advice.alternatives] == [HERO_NAMES[i] for i in (1, 2, 0)]
    # expectimax: the opponent replies at random, so 0 and 1 tie at 0.55 and the first one is kept
    random_reply = Drafter(table, parse_order("1-1", 1), mode="expectimax").advise(DraftState(([], []), []))
    assert random_reply.win_prob == pytest.approx(0.55)
    # team 1's answer to hero 0 is hero 2 (it minimizes team 0's chances)
    reply = Drafter(table, parse_order("1-1", 1)).advise(DraftState(([0], []), []))
    assert (reply.team, reply.pick, reply.win_prob) == (1, HERO_NAMES[2], pytest.approx(0.8))
    # with hero 1 banned the only replies are left: picking 0 is worth 0.2 (vs 2), picking 2 is worth 0.4 (vs 0)
    banned = Drafter(table, parse_order("1-1", 1)).advise(DraftState(([], []), [1]))
    assert (banned.pick, banned.win_prob) == (HERO_NAMES[2], pytest.approx(0.4))


def brute_force(value_of, pool, turns, teams, me, mode, bans=()) -> float:
    """Plain recursion over every pick sequence (no memo, no ranks)."""
    t = len(teams[0]) + len(teams[1])
    if t == len(turns):
        return value_of(teams)
    team = turns[t]
    free = [h for h in pool if h not in teams[0] and h not in teams[1] and h not in bans]
    children = []
    for h in free:
        nxt = (teams[0] + [h], teams[1]) if team == 0 else (teams[0], teams[1] + [h])
        children.append(brute_force(value_of, pool, turns, nxt, me, mode, bans))
    if mode == "expectimax" and team != me:
        return float(np.mean(children))
    return max(children) if team == 0 else min(children)


@pytest.mark.parametrize("mode", ["minimax", "expectimax"])
@pytest.mark.parametrize(("order", "first"), [("1-2-1", 0), ("2-2", 1)])
def test_search_equals_brute_force_on_a_random_2v2_table(mode, order, first):
    pool = [0, 3, 5, 8, 11, 16]
    space = LineupSpace(pool, 2)
    values = np.random.default_rng(7).random(space.size)
    table = hand_table(pool, 2, values)

    def value_of(teams):
        return float(table.values[space.index(np.array([[sorted(teams[0]), sorted(teams[1])]]))[0]])

    groups = parse_order(order, 2)
    turns = turn_teams(groups, first).tolist()
    drafter = Drafter(table, groups, first, mode)
    for picks in ([], [pool[2]]):
        teams = ([], list(picks)) if first == 1 else (list(picks), [])
        advice = drafter.advise(DraftState(teams, []))
        me = turns[len(picks)]
        want = {}
        for h in [p for p in pool if p not in picks]:
            nxt = (teams[0] + [h], teams[1]) if me == 0 else (teams[0], teams[1] + [h])
            v = brute_force(value_of, pool, turns, nxt, me, mode)
            want[HERO_NAMES[h]] = v if me == 0 else 1 - v
        assert advice.win_prob == pytest.approx(max(want.values()), abs=1e-6)
        assert want[advice.pick] == pytest.approx(advice.win_prob, abs=1e-6)
        for hero, v in advice.alternatives:
            assert want[hero] == pytest.approx(v, abs=1e-6)


@pytest.mark.parametrize("mode", ["minimax", "expectimax"])
@pytest.mark.parametrize(("order", "first", "bans"), [("1-2-2-1", 0, []), ("1-2-2-1", 1, [2, 9]), ("3-3", 0, [5])])
def test_early_queries_solved_bottom_up_equal_brute_force_with_bans(mode, order, first, bans):
    """A 3v3 draft over 9 heroes: the first two queries fill the whole memo of the ban set bottom-up
    (fill_memo), the later ones search top-down from it; every answer equals plain recursion."""
    pool = [0, 2, 4, 5, 7, 9, 11, 13, 16]
    space = LineupSpace(pool, 3)
    table = hand_table(pool, 3, np.random.default_rng(3).random(space.size))

    def value_of(teams):
        return float(table.values[space.index(np.array([[sorted(teams[0]), sorted(teams[1])]]))[0]])

    groups = parse_order(order, 3)
    turns = turn_teams(groups, first).tolist()
    drafter = Drafter(table, groups, first, mode)
    free = [h for h in pool if h not in bans]
    picks = free[1:6:2] + free[:1]  # a draft played out pick by pick
    for made in range(len(picks) + 1):
        teams = ([], [])
        for hero, team in zip(picks[:made], turns, strict=False):
            teams[team].append(hero)
        advice = drafter.advise(DraftState(teams, list(bans)))
        me = turns[made]
        want = {}
        for h in [p for p in free if p not in picks[:made]]:
            nxt = (teams[0] + [h], teams[1]) if me == 0 else (teams[0], teams[1] + [h])
            v = brute_force(value_of, pool, turns, nxt, me, mode, bans)
            want[HERO_NAMES[h]] = v if me == 0 else 1 - v
        assert advice.win_prob == pytest.approx(max(want.values()), abs=1e-6)
        assert want[advice.pick] == pytest.approx(advice.win_prob, abs=1e-6)
        assert dict(advice.alternatives) == pytest.approx({h: want[h] for h, _ in advice.alternatives}, abs=1e-6)
    # one memo for the ban set (per advised side in expectimax), solved once and reused by every query
    assert len(drafter._memos) == (1 if mode == "minimax" else 2)


def test_bottom_up_fill_equals_the_top_down_search_state_by_state():
    pool = list(range(10))
    space = LineupSpace(pool, 3)
    table = hand_table(pool, 3, np.random.default_rng(4).random(space.size))
    drafter = Drafter(table, parse_order("1-2-2-1", 3))
    args = (drafter.turns, 0, 0, space.n, space.binom, table.values)
    for bans in (0, 1 << 4 | 1 << 7):
        filled, offsets = drafter._memo_layout(0)
        fill_memo(0, bans, *args, filled, offsets)
        searched, _ = drafter._memo_layout(0)
        ints, floats = np.empty((2, 6, 10), dtype=np.int64), np.empty((6, 10))
        solve(0, 0, 0, bans, 0, drafter.turns, 0, 0, space.n, space.binom, table.values, searched, offsets, ints, floats)
        reached = ~np.isnan(searched)
        assert reached.sum() > 1000
        np.testing.assert_array_equal(np.isnan(filled), ~reached)  # the same states: those without a ban
        np.testing.assert_array_equal(filled[reached], searched[reached])


@pytest.mark.parametrize(
    ("order", "k", "message"),
    [("1-2-2-2-1", 5, "must sum to 10"), ("2-1-1", 2, "gives the teams 3 and 1"), ("1-x", 1, "pick counts")],
)
def test_bad_orders(order, k, message):
    with pytest.raises(BadInput, match=message):
        parse_order(order, k)


def test_picks_that_do_not_fit_the_order_or_repeat_a_hero():
    pool = list(range(6))
    table = hand_table(pool, 2, np.zeros(LineupSpace(pool, 2).size))
    drafter = Drafter(table, parse_order("1-2-1", 2))
    with pytest.raises(BadInput, match="after 2 picks the order gives 1 and 1"):
        drafter.advise(DraftState(([0, 1], []), []))
    with pytest.raises(BadInput, match="chosen twice"):
        drafter.advise(DraftState(([0], [0]), []))
    with pytest.raises(BadInput, match="not in the table's hero pool"):
        drafter.advise(DraftState(([12], []), []))
    with pytest.raises(BadInput, match="too many bans"):
        drafter.advise(DraftState(([], []), [0, 1, 2]))
    with pytest.raises(BadInput, match="complete"):
        drafter.advise(DraftState(([0, 1], [2, 3]), []))
