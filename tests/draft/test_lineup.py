"""Chosen lineups: the game starts every game of a slot with the heroes chosen for it (at reset, after a game
ends, on restart), the match runner keeps each side's heroes with its agent when sides alternate, and bad
lineups are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.config import GameConfig
from fivectl.errors import BadInput
from fivectl.evaluate import play_match
from fivectl.schema import load_schema
from fivectl.sim import MobaEnv, hero_id, parse_lineup

SHORT = dict(time_limit_s=1.0)


def test_chosen_heroes_at_reset_after_each_game_and_on_restart_while_other_slots_stay_random():
    env = MobaEnv(GameConfig(team_size=2, **SHORT), 3, 5, load_schema(2))
    chosen = np.array([[[0, 1], [2, 3]], [[16, 15], [14, 13]]])
    env.set_lineups(chosen, np.array([0, 2]))
    env.reset()
    np.testing.assert_array_equal(env.state.hero_id[[0, 2]], chosen.reshape(2, 4))
    random_slot = [env.state.hero_id[1].copy()]
    ended = 0
    for _ in range(20):  # 1 s games: 8 decision steps each
        _, _, done, _ = env.step(env.sample_random_actions(np.random.default_rng(0)))
        ended += int(done[0])
        if done[1]:
            random_slot.append(env.state.hero_id[1].copy())
        np.testing.assert_array_equal(env.state.hero_id[[0, 2]], chosen.reshape(2, 4))
    assert ended >= 2
    assert len({tuple(h) for h in random_slot}) > 1  # slot 1 still draws its heroes at random
    env.set_lineups(np.array([[[7, 8], [9, 10]]]), np.array([1]))
    env.restart(np.array([False, True, False]))
    np.testing.assert_array_equal(env.state.hero_id[1], [7, 8, 9, 10])
    env.set_lineups(None)  # back to random
    env.restart(np.ones(3, dtype=bool))
    assert not (env.state.hero_id == chosen.reshape(2, 4)[0]).all(axis=1).all()


class HeroRecorder:
    """Plays noop and writes down the heroes it controls and the enemy's, at every game it starts."""

    schema_version = None

    def __init__(self, spec: str):
        self.spec, self.seen = spec, []

    def reset(self, num_games, seed=None):
        pass

    def act(self, env, obs, team, first):
        return self.act_rows(env, obs, team, first, np.arange(len(team)))

    def act_rows(self, env, obs, team, first, rows):
        """Only the games it plays (idle slots also start games, with no one playing them)."""
        k = env.team_size
        heroes = env.state.hero_id
        for g in rows[first[rows]]:
            mine = heroes[g, team[g] * k : (team[g] + 1) * k]
            theirs = heroes[g, (1 - team[g]) * k : (2 - team[g]) * k]
            self.seen.append((int(team[g]), tuple(mine), tuple(theirs)))
        return np.zeros((len(rows), k, 4), dtype=np.int32)


def test_match_lineups_follow_their_agent_when_sides_alternate():
    a, b = HeroRecorder("a"), HeroRecorder("b")
    lineup = parse_lineup("Ashcaller,Kestrel vs nightpike,Orebinder", 2)
    r = play_match(a, b, GameConfig(team_size=2, **SHORT), games=6, seed=1, batch=4, lineups=lineup)
    assert r.games == 6
    assert {s[1:] for s in a.seen} == {((0, 10), (13, 14))}
    assert {s[1:] for s in b.seen} == {((13, 14), (0, 10))}
    assert {s[0] for s in a.seen} == {0, 1}  # A played both teams


def test_per_game_lineups_reach_the_game_that_was_queued_with_them():
    a, b = HeroRecorder("a"), HeroRecorder("b")
    lineups = np.array([[[g], [16 - g]] for g in range(5)])  # game g: A plays hero g, B hero 16 - g
    play_match(a, b, GameConfig(team_size=1, **SHORT), games=5, seed=0, batch=2, lineups=lineups)
    assert sorted(s[1][0] for s in a.seen) == [0, 1, 2, 3, 4]
    assert all(mine[0] == 16 - theirs[0] for _, mine, theirs in b.seen)
    assert all(team == hero % 2 for team, (hero,), _ in a.seen)  # game g puts A on team g % 2


@pytest.mark.parametrize(
    ("text", "size", "message"),
    [
        ("Ashcaler vs Kestrel", 1, "did you mean Ashcaller?"),
        ("Ashcaller vs ashcaller", 1, "Ashcaller picked twice"),
        ("Ashcaller,Kestrel vs Nightpike", 2, "needs 2"),
        ("Ashcaller Kestrel", 1, "two teams separated by 'vs'"),
        ("99 vs 1", 1, "ids 0..16"),
    ],
)
def test_bad_lineups_are_one_line_errors(text, size, message):
    with pytest.raises(BadInput, match=message):
        parse_lineup(text, size)


def test_names_and_ids_both_work():
    assert hero_id("KESTREL") == hero_id("10") == 10
    np.testing.assert_array_equal(parse_lineup("0,1 | 2,Duskweaver", 2), [[0, 1], [2, 3]])


def test_evaluate_match_lineup_cli(tiny_recipe):
    runner = CliRunner()
    base = ["evaluate", "match", "bot:easy", "random", "--games", "2", "--recipe", str(tiny_recipe)]
    ok = runner.invoke(app, [*base, "--set", "game.time_limit_s=2", "--lineup", "Kestrel vs Orebinder", "--json"])
    assert ok.exit_code == 0, ok.output
    assert '"lineup": "Kestrel vs Orebinder"' in ok.stdout
    bad = runner.invoke(app, [*base, "--lineup", "Kestrell vs Orebinder"])
    assert bad.exit_code == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "did you mean Kestrel" in bad.stderr


def test_recorded_games_with_chosen_lineups_have_those_heroes_and_re_simulate(tmp_path):
    from fivectl.replay import load_replay
    from fivectl.replay.verify import verify_replay
    from fivectl.store.replay import list_replays

    lineup = parse_lineup("Kestrel vs Orebinder", 1)
    play_match("random", "bot:easy", GameConfig(team_size=1, time_limit_s=3.0), 3, seed=2, batch=2,
               record=tmp_path, lineups=lineup)  # fmt: skip
    files = list_replays(tmp_path)
    assert len(files) == 3
    for i, path in enumerate(files):
        replay = load_replay(path)
        assert replay.header["lineup"] == (["Kestrel", "Orebinder"] if i % 2 == 0 else ["Orebinder", "Kestrel"])
        assert verify_replay(replay).ok  # the third game restarted a used slot with its chosen heroes
