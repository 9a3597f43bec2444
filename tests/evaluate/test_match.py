"""The match runner on a fake game: sides alternate, results are attributed to the right agent, agents never
switch sides within a game, statistics and the Wilson interval are right."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fivectl.config import GameConfig
from fivectl.errors import BadInput
from fivectl.evaluate import play_match, wilson_interval
from fivectl.evaluate.agents import RandomAgent
from fivectl.evaluate.match import AgentPool, MatchResult, Pairing, merge_results, play_matches

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


class CountingAgent(FixedAgent):
    """Counts what it is asked to play: calls, games started and slot-steps, in the games (rows) it plays only.

    The fake game restarts every slot as soon as its game ends, also once the match has no game left to put
    there: games in such idle slots are not asked about (an agent without ``act_rows`` is shown them anyway)."""

    def __init__(self, primary, spec):
        super().__init__(primary, spec)
        self.calls = self.games_played = self.slot_steps = 0

    def act(self, env, obs, team, first):
        return self.act_rows(env, obs, team, first, np.arange(len(team)))

    def act_rows(self, env, obs, team, first, rows):
        self.calls += 1
        self.games_played += int(first[rows].sum())
        self.slot_steps += len(rows)
        return FixedAgent.act(self, env, obs, team, first)[rows]


def game_steps(games: range) -> int:
    """Steps the fake game's games ``games`` last in all (game i: 3 + i % 4; slots take games in order)."""
    return sum(3 + i % 4 for i in games)


def test_every_game_is_played_once_with_few_slots(fake_env, fake_schema):
    a, b = CountingAgent(ATTACK, "a"), CountingAgent(0, "b")
    r = play_match(a, b, GameConfig(), games=9, batch=2, schema=fake_schema, make_env=fake_env)
    assert (r.games, r.outcomes) == (9, [1] * 9)  # every game has its own result (a missing one reads as a draw)
    for agent in (a, b):
        assert agent.games_played == 9  # no game started twice, none skipped, no idle slot's game played
        assert agent.slot_steps == game_steps(range(9))  # each game played to its end exactly once


def test_progress_counts_every_game_up_to_the_total(fake_env, fake_schema):
    calls: list[tuple[int, int]] = []
    a, b = CountingAgent(ATTACK, "a"), CountingAgent(0, "b")
    play_match(a, b, GameConfig(), games=9, batch=2, schema=fake_schema, make_env=fake_env,
               progress=lambda done, total: calls.append((done, total)))  # fmt: skip
    done = [d for d, _ in calls]
    assert {t for _, t in calls} == {9} and done == sorted(set(done)) and done[-1] == 9 and done[0] >= 1


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


class CountingEnv:
    """Wraps the fake game to count steps."""

    steps = 0

    def __init__(self, fake_env):
        self.fake_env = fake_env

    def __call__(self, *args):
        env = self.fake_env(*args)
        step = env.step

        def counted(actions):
            CountingEnv.steps += 1
            return step(actions)

        env.step = counted
        return env


def test_play_matches_attributes_every_match_and_calls_each_agent_once_per_step(fake_env, fake_schema):
    attacker, idler, other = CountingAgent(ATTACK, "attacker"), FixedAgent(0, "idler"), FixedAgent(0, "other")
    pairings = [Pairing(attacker, idler, 5), Pairing(idler, attacker, 4), Pairing(idler, other, 3)]
    CountingEnv.steps = 0
    results = play_matches(
        pairings, GameConfig(), seed=2, batch=4, schema=fake_schema, make_env=CountingEnv(fake_env)
    )
    assert [(r.a, r.b, r.games) for r in results] == [("attacker", "idler", 5), ("idler", "attacker", 4),
                                                       ("idler", "other", 3)]  # fmt: skip
    assert (
        results[0].outcomes == [1] * 5 and results[1].outcomes == [-1] * 4 and results[2].outcomes == [0] * 3
    )
    assert (results[0].team0_wins, results[1].team0_wins) == (3, 2)  # A on team i % 2 within each match
    assert attacker.calls <= CountingEnv.steps  # one call per step for both of its matches, not one each
    assert attacker.games_played == 9  # its 5 + 4 games (global games 0-8), each once
    assert attacker.slot_steps == game_steps(range(9))


class RowAgent(FixedAgent):
    """Acts only in the games it is asked about (``act_rows``), like a policy."""

    def __init__(self, primary, spec):
        super().__init__(primary, spec)
        self.row_counts: list[int] = []

    def act_rows(self, env, obs, team, first, rows):
        self.row_counts.append(len(rows))
        return self.act(env, obs, team, first)[rows]


def test_an_agent_with_act_rows_is_asked_only_about_its_games(fake_env, fake_schema):
    player = RowAgent(ATTACK, "player")
    pairings = [Pairing(player, FixedAgent(0, "x"), 3), Pairing(FixedAgent(0, "y"), FixedAgent(0, "z"), 3)]
    results = play_matches(pairings, GameConfig(), batch=6, schema=fake_schema, make_env=fake_env)
    assert results[0].outcomes == [1, 1, 1] and results[1].outcomes == [0, 0, 0]
    assert player.row_counts and max(player.row_counts) == 3


def test_an_agent_spec_playing_itself_gets_one_instance_per_side(fake_env, fake_schema):
    pool = AgentPool()
    r = play_match(
        "random", "random", GameConfig(), games=4, schema=fake_schema, make_env=fake_env, pool=pool
    )
    assert r.games == 4
    assert pool.get("random") is not pool.get("random", copy=1)
    kept = pool.get("random")
    play_match(" random", "random", GameConfig(), games=2, schema=fake_schema, make_env=fake_env, pool=pool)
    assert pool.get("random") is kept  # the pool keeps its agents across matches


def test_play_matches_is_deterministic_and_checks_its_input(fake_env, fake_schema):
    pairings = [Pairing("random", "random", 5), Pairing("random", "random", 3)]

    def run(seed):
        kw = dict(seed=seed, batch=3, schema=fake_schema, make_env=fake_env)
        return [r.outcomes for r in play_matches(pairings, GameConfig(), **kw)]

    assert run(1) == run(1)
    assert play_matches([], GameConfig()) == []
    with pytest.raises(BadInput, match="games"):
        play_matches([Pairing("random", "random", 0)], GameConfig(), schema=fake_schema, make_env=fake_env)


def test_merged_parts_add_up():
    def part(outcomes, kills):
        r = play_result(outcomes)
        return replace(r, a_kills_mean=kills)

    merged = merge_results([part([1, 1, -1], 3.0), part([0], 7.0)])
    assert merged.outcomes == [1, 1, -1, 0]
    assert (merged.games, merged.a_wins, merged.b_wins, merged.draws) == (4, 2, 1, 1)
    assert merged.a_win_rate == 2.5 / 4 and merged.a_win_rate_ci95 == wilson_interval(2.5, 4)
    assert merged.a_kills_mean == (3 * 3.0 + 7.0) / 4
    assert MatchResult.from_dict(merged.to_dict()) == merged


def play_result(outcomes: list[int]) -> MatchResult:
    a_wins, b_wins = outcomes.count(1), outcomes.count(-1)
    draws = len(outcomes) - a_wins - b_wins
    return MatchResult(
        "a", "b", len(outcomes), a_wins, b_wins, draws, (a_wins + draws / 2) / len(outcomes), (0.0, 1.0),
        300.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0, 0.0, 0, 1.0, list(outcomes),
    )  # fmt: skip


def test_a_checkpoint_of_another_team_size_is_bad_input_naming_both_sizes():
    from types import SimpleNamespace

    from fivectl.errors import BadInput
    from fivectl.evaluate.match import _check_team_sizes

    five = SimpleNamespace(spec="runs/five@9", team_size=5)
    bot = SimpleNamespace(spec="bot:easy")  # scripted agents play any team size
    _check_team_sizes([five, bot], 5)
    with pytest.raises(BadInput, match=r"runs/five@9 plays teams of 5, this game has teams of 1.*team_size=5"):
        _check_team_sizes([bot, five], 1)
