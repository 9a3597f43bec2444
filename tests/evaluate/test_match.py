"""The match runner on a fake game: sides alternate, results are attributed to the right agent, agents never
switch sides within a game, statistics and the Wilson interval are right."""

from __future__ import annotations

import numpy as np
import pytest

from fivectl.config import GameConfig
from fivectl.errors import BadInput
from fivectl.evaluate import play_match, wilson_interval
from fivectl.evaluate.agents import RandomAgent

ATTACK = 2


class FixedAgent:
    """Always the same primary action (target slot 0); checks it is never moved to the other side mid-game."""

    schema_version = None

    def __init__(self, primary: int, spec: str):
        self.primary, self.spec = primary, spec
        self.team: np.ndarray | None = None
        self.games_started = 0

    def reset(self, num_games, seed=None):
        self.team = None

    def act(self, env, obs, team, first):
        if self.team is not None:
            continuing = ~first
            assert (team[continuing] == self.team[continuing]).all(), "side changed within a game"
        self.team = team.copy()
        self.games_started += int(first.sum())
        actions = np.zeros((len(team), env.team_size, 4), dtype=np.int32)
        actions[..., 0] = self.primary
        actions[..., 3] = 40
        return actions


@pytest.mark.parametrize(("team_size", "batch"), [(1, 3), (2, 4), (5, 16)])
def test_winner_is_attributed_to_the_agent_not_the_team(fake_env, fake_schema, team_size, batch):
    attacker, idler = FixedAgent(ATTACK, "attacker"), FixedAgent(0, "idler")
    cfg = GameConfig(team_size=team_size)
    r = play_match(attacker, idler, cfg, games=7, seed=1, batch=batch, schema=fake_schema, make_env=fake_env)
    assert (r.a, r.b, r.games) == ("attacker", "idler", 7)
    assert (r.a_wins, r.b_wins, r.draws) == (7, 0, 0)
    assert r.outcomes == [1] * 7
    assert (r.team0_wins, r.team1_wins) == (4, 3)  # A played team 0 in games 0, 2, 4, 6
    assert r.a_win_rate == 1.0
    # Game i lasts 3 + i % 4 steps in the fake game (slots take games in order) and A kills once per hero-step.
    lengths = np.array([3 + i % 4 for i in range(7)])
    assert r.a_kills_mean == pytest.approx(team_size * lengths.mean())
    assert r.b_kills_mean == 0.0
    assert (r.a_towers_mean, r.b_towers_mean) == (1.0, 0.0)
    assert (r.a_last_hits_mean, r.b_last_hits_mean) == (2 * r.a_kills_mean, 0.0)
    assert r.mean_game_seconds == pytest.approx(lengths.mean() * 4 / 30, rel=1e-5)
    assert r.a_invalid_action_rate == 0.0


def test_losing_side_and_draws(fake_env, fake_schema):
    r = play_match(
        FixedAgent(0, "idler"), FixedAgent(ATTACK, "attacker"), GameConfig(), games=5, batch=2,
        schema=fake_schema, make_env=fake_env,
    )  # fmt: skip
    assert (r.a_wins, r.b_wins, r.draws, r.a_win_rate) == (0, 5, 0, 0.0)
    d = play_match(
        FixedAgent(0, "x"),
        FixedAgent(0, "y"),
        GameConfig(),
        games=4,
        batch=4,
        schema=fake_schema,
        make_env=fake_env,
    )
    assert (d.draws, d.a_win_rate, d.outcomes) == (4, 0.5, [0, 0, 0, 0])


def test_every_game_is_played_once_with_few_slots(fake_env, fake_schema):
    a, b = FixedAgent(ATTACK, "a"), FixedAgent(0, "b")
    play_match(a, b, GameConfig(), games=9, batch=2, schema=fake_schema, make_env=fake_env)
    assert a.games_started >= 9  # new games start in slots as old ones end (the last ones may be ignored)


def test_random_agent_only_takes_valid_actions(fake_env, fake_schema):
    cfg = GameConfig(team_size=3)
    r = play_match(RandomAgent(), RandomAgent(), cfg, games=6, batch=3, schema=fake_schema, make_env=fake_env)
    assert r.a_invalid_action_rate == 0.0 and r.b_invalid_action_rate == 0.0


def test_deterministic_for_a_seed(fake_env, fake_schema):
    def run(seed):
        return play_match(
            "random",
            "random",
            GameConfig(),
            games=12,
            seed=seed,
            batch=4,
            schema=fake_schema,
            make_env=fake_env,
        ).outcomes

    assert run(3) == run(3)
    assert any(run(s) != run(3) for s in (4, 5, 6))


def test_to_dict_has_the_documented_keys(fake_env, fake_schema):
    d = play_match(
        "random", "random", GameConfig(), games=2, schema=fake_schema, make_env=fake_env
    ).to_dict()  # fmt: skip
    for key in ("a", "b", "games", "a_wins", "b_wins", "draws", "a_win_rate", "mean_game_seconds"):
        assert key in d
    assert len(d["a_win_rate_ci95"]) == 2


def test_bad_game_counts(fake_env, fake_schema):
    with pytest.raises(BadInput, match="games"):
        play_match("random", "random", GameConfig(), games=0, schema=fake_schema, make_env=fake_env)
    with pytest.raises(BadInput, match="batch"):
        play_match("random", "random", GameConfig(), games=2, batch=0, schema=fake_schema, make_env=fake_env)


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(100, 100)
    assert hi == 1.0 and lo == pytest.approx(0.9630, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
