import json
import math
import zlib
from dataclasses import replace

import numpy as np
import pytest

from fivectl.config import EvalConfig
from fivectl.errors import BadInput, FivectlError
from fivectl.evaluate.league import ANCHOR, LEAGUE_FILE, League, version_name
from fivectl.evaluate.trueskill import ANCHOR_SIGMA, BETA, SIGMA0, draw_margin

RUN = "runs/test"
# Hidden true skills on the TrueSkill scale (random = 0). Versions improve; v3 is close to bot:medium.
TRUE_SKILL = {
    "random": 0.0,
    "bot:passive": 4.0,
    "bot:easy": 12.0,
    "bot:medium": 24.0,
    f"{RUN}@0": 1.0,
    f"{RUN}@1": 7.0,
    f"{RUN}@2": 16.0,
    f"{RUN}@3": 27.0,
}
DRAW_P = 0.02


def synthetic_play(a: str, b: str, games: int, seed: int) -> list[int]:
    """Games drawn from TrueSkill's own model with the hidden skills: perf ~ N(skill, beta^2), draw within eps."""
    rng = np.random.default_rng([seed, zlib.crc32(a.encode()), zlib.crc32(b.encode())])
    diff = TRUE_SKILL[a] - TRUE_SKILL[b] + rng.normal(0.0, math.sqrt(2) * BETA, games)
    return np.where(np.abs(diff) <= draw_margin(DRAW_P), 0, np.sign(diff)).astype(int).tolist()


class Recorder:
    """Wraps a play_fn and notes, at each match, the two agents and their ratings when the match started."""

    def __init__(self, league: League, play=synthetic_play):
        self.league, self.play, self.calls = league, play, []

    def __call__(self, a: str, b: str, games: int, seed: int) -> list[int]:
        names = {self.league.spec(n): n for n in self.league.agents}
        na, nb = names[a], names[b]
        self.calls.append((na, nb, self.league.rating(na), self.league.rating(nb), games))
        return self.play(a, b, games, seed)


def cfg(**kw) -> EvalConfig:
    kw.setdefault("games_per_match", 2)  # one game per side per match: the window test sees every redraw
    return replace(EvalConfig(), **kw)


def open_league(tmp_path, **kw) -> League:
    return League.open(tmp_path / "league", cfg(**kw), run_spec=RUN, seed=7)


def comparable(league: League) -> tuple:
    agents = sorted((a.name, a.role, a.mu, a.sigma, a.fixed, a.version) for a in league.agents.values())
    games = [(g.a, g.b, g.winner, g.seed, g.game) for g in league.games]
    return agents, games, league.matches


def test_new_league_has_random_anchored_at_zero_and_bots_to_calibrate(tmp_path):
    league = open_league(tmp_path)
    assert league.rating(ANCHOR).mu == 0.0 and league.rating(ANCHOR).sigma == ANCHOR_SIGMA
    assert league.references() == [ANCHOR]
    assert league.uncalibrated() == ["bot:passive", "bot:easy", "bot:medium"]
    assert not (tmp_path / "league" / LEAGUE_FILE).exists()  # nothing written before a game is played


def test_calibration_orders_bots_and_freezes_them(tmp_path):
    league = open_league(tmp_path)
    calibrated = league.calibrate_references(synthetic_play, games_per_pair=10, rounds=3)
    assert calibrated == ["bot:passive", "bot:easy", "bot:medium"]
    mu = {n: league.rating(n).mu for n in ("random", "bot:passive", "bot:easy", "bot:medium")}
    assert mu["random"] == 0.0 < mu["bot:passive"] < mu["bot:easy"] < mu["bot:medium"]
    assert set(league.references()) == set(mu)
    assert league.uncalibrated() == []
    for name in ("bot:passive", "bot:easy", "bot:medium"):  # the joint fit recovers the hidden skills
        rating = league.rating(name)
        assert abs(rating.mu - TRUE_SKILL[name]) <= 3 * rating.sigma, (name, rating)
    played = {(g.a, g.b) for g in league.games}
    assert ("bot:easy", "bot:passive") in played  # bots are rated against each other, not only random


def test_versions_are_ordered_references_stay_fixed_random_stays_zero(tmp_path):
    league = open_league(tmp_path)
    league.calibrate_references(synthetic_play)
    frozen = {n: league.rating(n) for n in league.references()}
    ratings = league.evaluate_versions([0, 1, 2, 3], synthetic_play, games=40)
    mus = [ratings[v].mu for v in range(4)]
    assert mus == sorted(mus), mus
    assert {n: league.rating(n) for n in frozen} == frozen
    assert league.rating(ANCHOR).mu == 0.0
    # The strongest version lands near the strongest bot, as the hidden skills say.
    assert abs(ratings[3].mu - league.rating("bot:medium").mu) < 10


def test_evaluate_calibrates_first_when_needed(tmp_path):
    league = open_league(tmp_path)
    league.evaluate_version(0, synthetic_play, games=4)
    assert league.uncalibrated() == []
    assert all(league.agents[n].fixed for n in ("bot:passive", "bot:easy", "bot:medium"))


def test_test_agent_plays_only_references_within_the_window(tmp_path):
    league = open_league(tmp_path, match_window=10.0)
    league.calibrate_references(synthetic_play)
    recorder = Recorder(league)
    league.evaluate_versions([0, 1, 2, 3], recorder, games=30)
    refs = [league.agents[n] for n in league.references()]
    assert recorder.calls
    opponents = set()
    for a, b, ra, rb, _ in recorder.calls:
        assert league.agents[a].version is not None and league.agents[b].fixed
        close = [r for r in refs if abs(r.mu - ra.mu) <= 10.0]
        if close:
            assert abs(rb.mu - ra.mu) <= 10.0
        else:
            assert b == min(refs, key=lambda r: abs(r.mu - ra.mu)).name
        opponents.add(b)
    assert len(opponents) >= 3  # the window moves with the rating: more than one reference gets played


def test_nearest_reference_when_none_is_within_the_window(tmp_path):
    league = open_league(tmp_path, match_window=0.5, references=["random"])
    league.agents["random"].mu = 0.0
    recorder = Recorder(league)
    league.evaluate_version(3, recorder, games=6)
    assert [c[1] for c in recorder.calls] == ["random"] * 3


def test_games_per_match_batches_games_between_opponent_draws(tmp_path):
    league = open_league(tmp_path, games_per_match=10, references=["random"])
    league.agents["random"].mu = 0.0
    recorder = Recorder(league)
    league.evaluate_version(3, recorder, games=25)
    assert [c[4] for c in recorder.calls] == [10, 10, 5]


def test_new_version_starts_at_previous_mu_with_fresh_sigma(tmp_path):
    league = open_league(tmp_path)
    recorder = Recorder(league)
    league.evaluate_version(0, recorder, games=10)
    first = [c for c in recorder.calls if c[0] == "v0"][0]
    assert first[2].mu == 0.0 and first[2].sigma == SIGMA0  # the first version starts at random's level
    v0 = league.rating("v0")
    league.evaluate_version(2, recorder, games=4)
    first = [c for c in recorder.calls if c[0] == "v2"][0]
    assert first[2].mu == v0.mu and first[2].sigma == SIGMA0
    v2 = league.rating("v2")
    league.evaluate_version(1, recorder, games=2)  # an older version starts from the one before it
    assert [c for c in recorder.calls if c[0] == "v1"][0][2].mu == v0.mu
    league.evaluate_version(3, recorder, games=2)
    assert [c for c in recorder.calls if c[0] == "v3"][0][2].mu == v2.mu


def test_play_fn_gets_run_specs_and_every_game_is_stored(tmp_path):
    league = open_league(tmp_path)
    seen = []

    def play(a, b, games, seed):
        seen.append((a, b, games, seed))
        return synthetic_play(a, b, games, seed)

    league.evaluate_version(2, play, games=5, games_per_match=2)
    version_calls = [s for s in seen if s[0].startswith(RUN)]
    assert [s[0] for s in version_calls] == [f"{RUN}@2"] * 3
    assert [s[2] for s in version_calls] == [2, 2, 1]
    assert len(league.games) == sum(s[2] for s in seen)
    on_disk = json.loads((tmp_path / "league" / LEAGUE_FILE).read_text())
    assert len(on_disk["games"]) == len(league.games)
    last = on_disk["games"][-1]
    assert set(last) == {"a", "b", "winner", "seed", "game", "time"}
    assert last["a"] == "v2" and last["seed"] == version_calls[-1][3] and last["game"] == 0
    assert last["winner"] in ("v2", last["b"], None)


def test_evaluation_accumulates(tmp_path):
    league = open_league(tmp_path)
    league.evaluate_version(1, synthetic_play, games=6)
    before = league.leaderboard()
    sigma = league.rating("v1").sigma
    league.evaluate_version(1, synthetic_play, games=6)
    games = {r.name: r.games for r in league.leaderboard()}
    assert games["v1"] == 12 and league.rating("v1").sigma < sigma
    assert {r.name: r.games for r in before}["v1"] == 6


def test_resume_from_disk_gives_identical_results(tmp_path):
    straight = League.open(tmp_path / "a", cfg(), run_spec=RUN, seed=3)
    straight.evaluate_versions([0, 1, 2, 3], synthetic_play, games=10)

    resumed = League.open(tmp_path / "b", cfg(), run_spec=RUN, seed=3)
    resumed.evaluate_versions([0, 1], synthetic_play, games=10)
    resumed.evaluate_version(2, synthetic_play, games=4)
    resumed = League.open(tmp_path / "b", cfg(), run_spec=RUN, seed=999)  # the stored seed wins
    resumed.evaluate_version(2, synthetic_play, games=6)
    resumed = League.open(tmp_path / "b", cfg(), run_spec=RUN)
    resumed.evaluate_version(3, synthetic_play, games=10)

    assert comparable(resumed) == comparable(straight)
    assert League.open(tmp_path / "b", cfg(), run_spec=RUN).leaderboard() == straight.leaderboard()


def test_different_seeds_give_different_games(tmp_path):
    a = League.open(tmp_path / "a", cfg(), run_spec=RUN, seed=1)
    b = League.open(tmp_path / "b", cfg(), run_spec=RUN, seed=2)
    for league in (a, b):
        league.evaluate_version(1, synthetic_play, games=10)
    assert comparable(a) != comparable(b)


def test_pinned_version_becomes_a_fixed_reference(tmp_path):
    league = open_league(tmp_path)
    with pytest.raises(BadInput, match="no agent"):
        league.pin("v2")
    with pytest.raises(BadInput, match="no games"):
        league.pin("bot:easy")  # not calibrated yet: it has no rating to freeze
    league.evaluate_version(2, synthetic_play, games=20)
    pinned = league.pin("v2")
    assert "v2" in league.references()
    with pytest.raises(BadInput, match="pinned"):
        league.evaluate_version(2, synthetic_play, games=2)
    recorder = Recorder(league)
    league.evaluate_version(3, recorder, games=30)
    assert league.rating("v2") == pinned
    assert any(c[1] == "v2" for c in recorder.calls)
    reopened = open_league(tmp_path)
    assert reopened.agents["v2"].fixed


def test_leaderboard_rows(tmp_path):
    league = open_league(tmp_path)
    league.evaluate_versions([1, 3], synthetic_play, games=10)
    rows = league.leaderboard()
    assert [r.mu for r in rows] == sorted((r.mu for r in rows), reverse=True)
    by_name = {r.name: r for r in rows}
    assert set(by_name) == {"random", "bot:passive", "bot:easy", "bot:medium", "v1", "v3"}
    for r in rows:
        assert r.conservative == pytest.approx(r.mu - 3 * r.sigma)
    assert sum(r.games for r in rows) == 2 * len(league.games)
    assert by_name["v3"].games == 10 and by_name["random"].role == "anchor"
    assert set(rows[0].to_dict()) == {"name", "role", "mu", "sigma", "conservative", "games", "fixed"}


def test_winrate_matrix(tmp_path):
    league = open_league(tmp_path, references=["random"])

    def v_always_wins(a, b, games, seed):
        return [1] * games if a.startswith(RUN) else synthetic_play(a, b, games, seed)

    league.evaluate_version(0, v_always_wins, games=4)
    league.evaluate_version(1, lambda a, b, g, s: [0, -1][:g], games=2, games_per_match=2)
    m = league.winrate_matrix()
    i = {n: k for k, n in enumerate(m.names)}
    assert m.rates[i["v0"], i["random"]] == 1.0 and m.rates[i["random"], i["v0"]] == 0.0
    assert m.rates[i["v1"], i["random"]] == 0.25  # a draw counts half
    assert m.games[i["v0"], i["random"]] == 4
    assert math.isnan(m.rates[i["v0"], i["v1"]])
    played = m.games > 0
    np.testing.assert_allclose((m.rates + m.rates.T)[played], 1.0)
    d = league.summary()
    assert d["games"] == 6 and d["winrate"]["rates"][i["v0"]][i["v1"]] is None
    json.dumps(d, allow_nan=False)


def test_plot_ratings_writes_png(tmp_path):
    league = open_league(tmp_path)
    with pytest.raises(BadInput, match="no rated versions"):
        league.plot_ratings(tmp_path / "r.png")
    league.evaluate_versions([0, 1, 2], synthetic_play, games=4)
    out = league.plot_ratings(tmp_path / "plots" / "ratings.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"format": 2}',
        '{"format": 1, "seed": 0, "matches": 0, "agents": [], "games": []}',
        '{"format": 1, "seed": 0, "matches": 0, "agents": [{"name": "random", "role": "anchor", "mu": 0,'
        ' "sigma": 0.001, "fixed": true, "version": null}], "games": [{"a": "random", "b": "v9",'
        ' "winner": null, "seed": 1, "game": 0, "time": "t"}]}',
        '{"format": 1, "seed": 0, "matches": 0, "agents": [{"name": "random", "role": "anchor", "mu": 0,'
        ' "sigma": -1, "fixed": true, "version": null}], "games": []}',
    ],
)
def test_corrupt_league_file_is_bad_input_and_left_alone(tmp_path, content):
    folder = tmp_path / "league"
    folder.mkdir()
    (folder / LEAGUE_FILE).write_text(content)
    with pytest.raises(BadInput, match="corrupt league file") as err:
        League.open(folder, cfg(), run_spec=RUN)
    assert str(folder / LEAGUE_FILE) in str(err.value)
    assert (folder / LEAGUE_FILE).read_text() == content


def test_bad_play_fn_output_is_an_error_and_nothing_is_recorded(tmp_path):
    league = open_league(tmp_path, references=["random"])
    with pytest.raises(FivectlError, match="play_fn returned"):
        league.evaluate_version(0, lambda a, b, g, s: [2] * g, games=2)
    with pytest.raises(FivectlError, match="play_fn returned"):
        league.evaluate_version(0, lambda a, b, g, s: [1], games=2)
    assert league.games == [] and league.rating("v0").sigma == SIGMA0


def test_bad_arguments(tmp_path):
    league = open_league(tmp_path)
    with pytest.raises(BadInput):
        league.evaluate_version(-1, synthetic_play)
    with pytest.raises(BadInput):
        league.evaluate_version(1, synthetic_play, games=0)
    with pytest.raises(BadInput, match="no agent"):
        league.rating("v42")
    assert version_name(42) == "v42"


def test_league_of_a_run_lives_in_its_league_folder(tmp_path):
    from fivectl.config import Recipe
    from fivectl.store.rundir import RunDir

    recipe = Recipe()
    recipe.eval.references = ["random", "bot:easy"]
    run = RunDir.create(tmp_path / "run", recipe)
    seen = []

    def play(a, b, games, seed):
        seen.append(a)
        return synthetic_play(a.replace(str(run.path), RUN), b, games, seed)

    league = League.for_run(run)
    league.evaluate_version(1, play, games=2)
    assert f"{run.path}@1" in seen
    assert (run.league_path / LEAGUE_FILE).is_file()
    assert set(League.for_run(RunDir.open(run.path)).agents) == {"random", "bot:easy", "v1"}


def test_session_locks_the_league_against_a_second_evaluation(tmp_path):
    folder = tmp_path / "league"
    with League.session(folder, cfg(), run_spec=RUN, seed=5) as league:
        league.evaluate_version(0, synthetic_play, games=2)
        with pytest.raises(BadInput, match="in use"):
            with League.session(folder, cfg(), run_spec=RUN):
                pass
    with League.session(folder, cfg(), run_spec=RUN) as again:
        assert again.seed == 5 and "v0" in again.agents


def test_interrupted_calibration_keeps_its_games_and_finishes_later(tmp_path):
    league = open_league(tmp_path, references=["random", "bot:easy"])
    calls = []

    def flaky(a, b, games, seed):
        calls.append(a)
        if len(calls) == 2:
            raise FivectlError("worker died")
        return synthetic_play(a, b, games, seed)

    with pytest.raises(FivectlError, match="worker died"):
        league.calibrate_references(flaky, games_per_pair=10)
    reopened = open_league(tmp_path, references=["random", "bot:easy"])
    assert len(reopened.games) == 10 and reopened.uncalibrated() == ["bot:easy"]
    reopened.calibrate_references(synthetic_play, games_per_pair=10)
    assert reopened.agents["bot:easy"].fixed and len(reopened.games) > 10


class BatchedPlay:
    """A play_fn with ``play_many``: records how the league hands it matches."""

    def __init__(self):
        self.batches: list[int] = []
        self.single = 0

    def __call__(self, a, b, games, seed):
        self.single += 1
        return synthetic_play(a, b, games, seed)

    def play_many(self, matches):
        self.batches.append(len(matches))
        return [synthetic_play(*m) for m in matches]


def test_a_calibration_round_is_one_batch_with_the_same_results(tmp_path):
    one_by_one = League.open(tmp_path / "a", cfg(), run_spec=RUN, seed=4)
    one_by_one.calibrate_references(synthetic_play, games_per_pair=6, rounds=3)
    batched = League.open(tmp_path / "b", cfg(), run_spec=RUN, seed=4)
    play = BatchedPlay()
    batched.calibrate_references(play, games_per_pair=6, rounds=3)
    assert len(play.batches) == 3 and play.single == 0
    assert play.batches[0] == 9  # first round: every bot starts at 0, so each plays the three others
    assert comparable(batched) == comparable(one_by_one)  # same matches, same seeds, same order
    batched.evaluate_version(1, play, games=4)
    assert play.batches[3:] == [1, 1]  # a version's matches wait on each other's ratings: one at a time


def test_league_times_its_stages(tmp_path):
    league = open_league(tmp_path)
    league.evaluate_version(0, synthetic_play, games=4)
    assert league.seconds["calibration"] > 0 and league.seconds["versions"] > 0


def test_on_game_counts_every_game_played_up_to_the_games_planned(tmp_path):
    league = open_league(tmp_path)  # references to calibrate first: their rounds add to the total
    calls: list[tuple[int, int]] = []
    league.on_game = lambda done, total: calls.append((done, total))
    league.evaluate_versions([0, 1], synthetic_play, games=6)
    done, totals = [d for d, _ in calls], [t for _, t in calls]
    assert done == sorted(done) and totals == sorted(totals)  # never backwards
    assert all(d <= t for d, t in calls)
    assert calls[-1] == (len(league.games), len(league.games))  # every game counted, and nothing more planned
    assert totals[0] == 12  # both versions' games are known before the first is played
    league.on_game = None
    league.evaluate_version(2, synthetic_play, games=2)  # nobody listens: nothing called
    assert len(calls) == len(done)


def test_the_league_read_by_training_and_the_anneal_guard(tmp_path):
    from fivectl.anneal.guard import league_rating
    from fivectl.config import recipe_from_dict
    from fivectl.evaluate.league import read_league
    from fivectl.evaluate.periodic import PeriodicEvaluator
    from fivectl.store.rundir import RunDir

    run = RunDir.create(tmp_path / "run", recipe_from_dict({}))
    periodic = PeriodicEvaluator(run.path, every_versions=2, games=4)
    assert read_league(run.league_path) is None and periodic.latest_rating() is None  # nothing rated yet
    league = League.open(run.league_path, cfg(), run_spec=RUN, seed=7)
    league.evaluate_versions([0, 1], synthetic_play, games=4)
    read = read_league(run.league_path)
    assert read is not None and comparable(read) == comparable(league)
    newest = league.rating(version_name(1))
    assert periodic.latest_rating() == {"version": 1, "mu": newest.mu, "sigma": newest.sigma}
    assert league_rating(run.league_path, 1) == {"mu": newest.mu, "sigma": newest.sigma}
    assert league_rating(run.league_path, 5) is None  # never rated
    league._version_agent(5)  # in the league, no games yet: not rated
    league.save()
    assert league_rating(run.league_path, 5) is None
    assert periodic.latest_rating()["version"] == 5  # the newest version the league holds, as before
    league.file.write_text("{corrupt")
    with pytest.raises(BadInput, match="corrupt league file"):
        read_league(run.league_path)
    assert periodic.latest_rating() is None and league_rating(run.league_path, 1) is None  # training goes on
