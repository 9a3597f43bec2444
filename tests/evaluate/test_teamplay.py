import numpy as np
import pytest

from fivectl.config import GameConfig
from fivectl.evaluate.match import play_match
from fivectl.evaluate.teamplay import TeamPlayTracker, tracks_team_play
from fivectl.schema import load_schema
from fivectl.sim import FOUNTAIN_POS, LANE_POINTS
from tests.sim.conftest import make_env, noop, place, slot_of

ATTACK = 2
VICTIM = 3  # heroes 0-2 are team 0, 3-5 team 1


@pytest.fixture(scope="module")
def schema():
    return load_schema(2)


def kill_with_helpers(schema, helpers_near: int) -> TeamPlayTracker:
    """Hero 0 kills hero 3 at the map's centre with ``helpers_near`` more heroes of team 0 beside it."""
    env = make_env(schema, team_size=3, lanes=3)
    for u, x, y in ((VICTIM, 6000, 6000), (0, 6080, 6000), (1, 6000, 6150), (2, 6100, 5900)):
        place(env, u, x, y)
    for h in range(1 + helpers_near, 3):  # the others stand far away
        place(env, h, 6000 + 3000, 6000)
    for h in (4, 5):
        place(env, h, 2000, 9000)
    env.state.hp[0, VICTIM] = 1.0
    env.observe()
    tracker = TeamPlayTracker(env, total_games=1)
    slot_game = np.zeros(1, dtype=np.int64)
    act = noop(env)
    act[0, 0] = (ATTACK, 0, slot_of(env, 0, VICTIM), 0)
    tracker.before_step(slot_game)
    _, _, done, _ = env.step(act)
    tracker.after_step(slot_game, done)
    assert env.state.alive[0, VICTIM] == 0
    return tracker


@pytest.mark.parametrize("helpers_near, grouped", [(0, 0.0), (1, 1.0), (2, 1.0)])
def test_a_kill_is_grouped_when_two_or_more_of_the_team_stand_near(schema, helpers_near, grouped):
    tracker = kill_with_helpers(schema, helpers_near)
    assert tracker.kills[0].tolist() == [1.0, 0.0]
    assert tracker.grouped[0].tolist() == [grouped, 0.0]
    figures = tracker.side_figures(slice(0, 1), np.array([0]))
    assert figures["a_grouped_kill_share"] == grouped
    assert figures["b_grouped_kill_share"] is None  # B killed no one


def test_lanes_covered_counts_the_lanes_with_a_living_hero_outside_the_bases(schema):
    env = make_env(schema, team_size=3, lanes=3)
    top, mid, bot = (LANE_POINTS[name][1] for name in ("top", "mid", "bot"))
    for h, (x, y) in enumerate((top, mid, bot)):  # team 0: one hero on each lane's middle point
        place(env, h, x, y)
    for h in (3, 4):  # team 1: two heroes together on mid, the third in its base
        place(env, h, mid[0] + 100 * (h - 3), mid[1])
    place(env, 5, *FOUNTAIN_POS[1])
    tracker = TeamPlayTracker(env, total_games=1)
    tracker.before_step(np.zeros(1, dtype=np.int64))
    figures = tracker.side_figures(slice(0, 1), np.array([0]))
    assert figures["a_lanes_covered"] == 3.0
    assert figures["b_lanes_covered"] == 1.0
    assert figures["a_home_share"] == 0.0
    assert figures["b_home_share"] == pytest.approx(1 / 3)  # one of its three living heroes at its fountain
    env.state.alive[0, 1] = 0  # a dead hero covers no lane
    tracker.before_step(np.zeros(1, dtype=np.int64))  # sampled again only every tracker.every steps
    assert tracker.lane_samples[0, 0] == 1


def test_matches_of_teams_report_team_play_and_1v1_does_not():
    game = GameConfig(team_size=2, lanes=3, time_limit_s=30.0)
    r = play_match("bot:easy", "random", game, games=2, batch=2)
    assert r.a_lanes_covered is not None and r.b_lanes_covered is not None
    assert r.a_lanes_covered > r.b_lanes_covered  # the bots walk to their lanes, random play mills at home
    assert r.a_home_share < r.b_home_share
    assert "a_lanes_covered" in r.to_dict()
    solo = play_match("bot:easy", "random", GameConfig(time_limit_s=30.0), games=1)
    assert solo.a_lanes_covered is None and solo.a_grouped_kill_share is None


def test_only_the_embedded_game_with_teams_is_tracked(schema):
    assert tracks_team_play(make_env(schema, team_size=2, lanes=3))
    assert not tracks_team_play(make_env(schema))
