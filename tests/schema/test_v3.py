"""Schema v3: v2 plus lineups, respawn timers and effect durations, each checked against the game state."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.config.model import ModelConfig
from fivectl.model import PolicyNet
from fivectl.schema import load_schema
from fivectl.sim import data as D
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.rollouts import read_rollouts
from fivectl.surgery.add_obs import plan_add_obs
from fivectl.surgery.plan import apply_model
from fivectl.surgery.schemas import added_fields, superset_errors
from tests.sim.conftest import make_env, noop, place, slot_of


@pytest.fixture(scope="module")
def v2():
    return load_schema(2)


@pytest.fixture(scope="module")
def v3():
    return load_schema(3)


def columns(schema, group, field):
    g = schema.group(group)
    f = next(f for f in g.fields if f.name == field)
    return ("float", g.float_columns()[field]) if f.is_float else ("cat", g.cat_columns()[field])


def value(obs, schema, group, field, g=0, agent=0, slot=None):
    """The encoded value(s) of ``group.field`` for one agent (and one unit slot of a unit set)."""
    part, cols = columns(schema, group, field)
    row = obs[f"{group}.{part}"][g, agent]
    if slot is not None:
        row = row[slot]
    out = row[cols]
    return out if out.size > 1 else out.item()


def with_seen_normalizers(net):
    """``net`` with normalizers that have seen data (random means and variances), so every input column matters."""
    for name, b in net.named_buffers():
        if name.endswith(".mean"):
            b.normal_()
        elif name.endswith(".var"):
            b.uniform_(0.1, 3.0)
    return net


def model_outputs(net, obs):
    """``net``'s log-probabilities of the no-op action, values and win logits on one step of encoded games."""
    window = {k: torch.from_numpy(v.reshape(1, -1, *v.shape[2:])) for k, v in obs.items()}
    b = window["action_mask"].shape[1]
    actions = torch.zeros(1, b, 4, dtype=torch.long)
    with torch.no_grad():
        out = net.evaluate(window, actions, net.initial_state(b), torch.ones(1, b, dtype=torch.bool))
    return out.logprob, out.value, out.win_logit


def test_v3_appends_to_v2_without_changing_it(v2, v3):
    """What makes ``surgery add-obs`` from v2 exact (W' = [W 0]): every v2 group is still there, in order and with
    the same settings, with its v2 fields first and unchanged; only fields are added; the actions and frame stay."""
    assert v3.action == v2.action and v3.frame == v2.frame
    assert [g.name for g in v3.groups[: len(v2.groups)]] == [g.name for g in v2.groups]
    added = []
    for old, new in zip(v2.groups, v3.groups[: len(v2.groups)], strict=True):
        assert (new.kind, new.count, new.size, new.targetable) == (
            old.kind,
            old.count,
            old.size,
            old.targetable,
        )
        assert new.fields[: len(old.fields)] == old.fields, old.name
        added += [f"{new.name}.{f.name}" for f in new.fields[len(old.fields) :]]
    assert {"global.enemy_lineup", "global.enemy_respawn", "heroes.stun_s", "self.stun_s"} <= set(added)
    assert superset_errors(v2, v3) == [] and added_fields(v2, v3) == added  # what surgery add-obs checks


def same_game(v2, v3, steps=40, **game):
    """One game played with the same actions, encoded for v2 and for v3."""
    game = dict(team_size=2, lanes=3, randomize_lineup=True, randomize_initial_state=True, **game)
    e2, e3 = make_env(v2, 2, seed=5, **game), make_env(v3, 2, seed=5, **game)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions = e2.sample_random_actions(rng)
        o2, *_ = e2.step(actions)
        o3, *_ = e3.step(actions)
    return o2, o3


def test_v3_encodes_v2_columns_as_v2_does(v2, v3):
    """The same game encoded for v2 and v3: v3's leading columns of every array are v2's (so a v2 model given v3
    observations with zero weights on the new columns sees exactly what it saw); the new columns are extra."""
    o2, o3 = same_game(v2, v3)
    for key, a in o2.items():
        b = o3[key]
        assert b.shape[:-1] == a.shape[:-1], key
        assert np.array_equal(b[..., : a.shape[-1]], a), key
    assert set(o3) - set(o2) == {"global.cat"}  # v2's global group has no categorical field
    for key in ("global.float", "self.float", "heroes.float"):
        assert o3[key].shape[-1] > o2[key].shape[-1], key


def test_add_obs_from_v2_to_v3_keeps_a_models_outputs_on_real_games(v2, v3):
    """``surgery add-obs`` of a v2 model to v3: fed v3's encoding of a game, the child gives the parent's outputs
    on v2's encoding of the same game, whatever the new fields hold (lineups, timers, effects)."""
    o2, o3 = same_game(v2, v3, steps=60)
    cfg = ModelConfig(unit_embed=8, unit_hidden=16, cat_embed=4, grid_channels=4, fc_size=32, lstm_size=16)
    torch.manual_seed(0)
    parent = with_seen_normalizers(PolicyNet(v2, cfg, 2).eval())
    plan = plan_add_obs(v2, v3, cfg, 2, new_label="v3")
    child = PolicyNet(v3, cfg, 2)
    child.load_state_dict(apply_model(plan, dict(parent.state_dict())))
    child.eval()

    assert (o3["global.cat"][..., [0, 1, 5, 6]] > 0).all()  # the lineups of two 2-hero teams are there
    rng = np.random.default_rng(1)
    for name in ("global", "self", "heroes"):  # timers and effects: any value (few are nonzero in 60 steps)
        x = o3[f"{name}.float"]
        x[..., v2.group(name).n_float :] = rng.uniform(0, 30, x[..., v2.group(name).n_float :].shape)
    for want, got in zip(model_outputs(parent, o2), model_outputs(child, o3), strict=True):
        assert torch.allclose(want, got, atol=1e-5)


@pytest.mark.parametrize("team_size,lanes", [(1, 1), (5, 3)])
def test_lineups_are_known_on_the_first_frame_under_fog(v3, team_size, lanes):
    env = make_env(v3, 2, seed=1, team_size=team_size, lanes=lanes, randomize_lineup=True)
    obs = env.observe()
    k = team_size
    hero_id = env.state.hero_id
    assert not (hero_id[0] == hero_id[1]).all()  # random lineups: the games differ
    enemy_flag = v3.group("heroes").float_columns()["enemy"]
    for g in range(2):
        for agent in range(2 * k):
            mine, theirs = (0, 1) if agent < k else (1, 0)
            # fog: no enemy hero is in the observed unit set (they are in their base) ...
            seen = obs["heroes.mask"][g, agent]
            assert not obs["heroes.float"][g, agent, seen, enemy_flag].any()
            # ... but the lineups are public: hero id + 1 per team slot in agent order, 0 past the team size
            pad = [0] * (D.MAX_TEAM_SIZE - k)
            enemy = value(obs, v3, "global", "enemy_lineup", g, agent).tolist()
            ally = value(obs, v3, "global", "ally_lineup", g, agent).tolist()
            assert enemy == [int(i) + 1 for i in hero_id[g, theirs * k : (theirs + 1) * k]] + pad
            assert ally == [int(i) + 1 for i in hero_id[g, mine * k : (mine + 1) * k]] + pad
            assert value(obs, v3, "self", "hero_id", g, agent) in ally


def test_a_dead_heros_respawn_timer_counts_down_for_both_teams(v3):
    env = make_env(v3)
    s, fps, step_s = env.state, env.cfg.fps, env.cfg.frameskip / env.cfg.fps
    place(env, 0, 6000, 6000)
    place(env, 1, 6080, 6000)
    s.hp[0, 1] = 1.0
    env.observe()
    act = noop(env)
    act[0, 0] = (v3.action.primary.index("attack"), 0, slot_of(env, 0, 1), 0)
    obs, *_ = env.step(act)
    assert s.alive[0, 1] == 0
    full = 4.0 + 2.0 * s.level[0, 1]  # the game's respawn time at this level
    timer = value(obs, v3, "global", "enemy_respawn", agent=0)
    assert timer[0] == pytest.approx(s.respawn_t[0, 1] / fps) and full - step_s <= timer[0] < full
    assert (timer[1:] == 0).all() and (value(obs, v3, "global", "ally_respawn", agent=0) == 0).all()
    assert not obs["heroes.mask"][0, 0, 1]  # the dead enemy is not in the unit set, only its timer tells
    # the dead hero's own team sees the same timer, as its self.respawn_s
    assert value(obs, v3, "global", "ally_respawn", agent=1)[0] == pytest.approx(timer[0])
    assert value(obs, v3, "self", "respawn_s", agent=1) == pytest.approx(timer[0])
    previous = timer[0]
    for _ in range(5):
        obs, *_ = env.step(noop(env))
        now = value(obs, v3, "global", "enemy_respawn", agent=0)[0]
        assert now == pytest.approx(previous - step_s, abs=1e-4)
        previous = now
    while s.alive[0, 1] == 0:
        obs, *_ = env.step(noop(env))
    assert value(obs, v3, "global", "enemy_respawn", agent=0)[0] == 0
    assert value(obs, v3, "global", "ally_respawn", agent=1)[0] == 0


@pytest.mark.parametrize(
    "ability,field,flag", [("shatter_strike", "stun_s", "stunned"), ("frost_lash", "slow_s", "slowed")]
)
def test_seconds_left_of_a_stun_or_slow_on_the_enemy(v3, ability, field, flag):
    env = make_env(v3)
    s, fps, step_s = env.state, env.cfg.fps, env.cfg.frameskip / env.cfg.fps
    s.abil_id[0, 0, 0] = D.ABILITY_ID[ability]
    s.abil_lvl[0, 0, 0] = 1
    s.mana[0, 0] = s.max_mana[0, 0]
    place(env, 0, 6000, 6000)
    place(env, 1, 6300, 6000)
    env.observe()
    act = noop(env)
    act[0, 0] = (v3.action.primary.index("ability1"), 0, slot_of(env, 0, 1), 0)
    obs, _, _, info = env.step(act)
    assert info["invalid_actions"][0, 0] == 0
    duration = D.ABILITIES[D.ABILITY_ID[ability], D.AB_DUR]
    left = (s.stun_t if field == "stun_s" else s.slow_t)[0, 1] / fps
    assert duration - step_s <= left < duration
    slot = int(np.flatnonzero(env.state.slot_unit[0, 0] == 1)[0])
    assert value(obs, v3, "heroes", field, agent=0, slot=slot) == pytest.approx(left)
    assert value(obs, v3, "heroes", flag, agent=0, slot=slot) == 1
    assert value(obs, v3, "self", field, agent=1) == pytest.approx(left)  # the victim knows it too
    assert value(obs, v3, "self", field, agent=0) == 0
    obs, *_ = env.step(noop(env))
    assert value(obs, v3, "self", field, agent=1) == pytest.approx(left - step_s, abs=1e-4)
    place(env, 1, 9000, 2000)  # into fog: team 0 keeps its last seen state but not its effects
    obs = env.observe()
    assert obs["heroes.mask"][0, 0, 1] and value(obs, v3, "heroes", "visible", agent=0, slot=1) == 0
    assert value(obs, v3, "heroes", field, agent=0, slot=1) == 0
    assert value(obs, v3, "self", field, agent=1) > 0


def test_seconds_left_of_a_buff_on_self(v3):
    env = make_env(v3)
    s, fps = env.state, env.cfg.fps
    s.abil_id[0, 0, 0] = D.ABILITY_ID["war_cry"]
    s.abil_lvl[0, 0, 0] = 1
    s.mana[0, 0] = s.max_mana[0, 0]
    env.observe()
    act = noop(env)
    act[0, 0] = (v3.action.primary.index("ability1"), 0, 0, 0)
    obs, _, _, info = env.step(act)
    assert info["invalid_actions"][0, 0] == 0
    left = s.buff_t[0, 0] / fps
    assert 0 < left <= D.ABILITIES[D.ABILITY_ID["war_cry"], D.AB_DUR]
    assert value(obs, v3, "self", "buff_s", agent=0) == pytest.approx(left)
    assert value(obs, v3, "self", "buffed", agent=0) == 1
    assert value(obs, v3, "heroes", "buff_s", agent=0, slot=0) == pytest.approx(left)  # slot 0: itself


def test_training_from_scratch_on_v3(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "train",
            str(tiny_recipe),
            "--run",
            str(run),
            "--set",
            "model.schema_version=3",
            "--max-samples",
            "300",
        ]
        + ["--json"],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["samples"] >= 300
    ckpt = CheckpointStore(run / "checkpoints.zarr").load()
    assert ckpt.attrs["schema_version"] == 3
    table = ckpt.arrays["model"]["encoder.embeds.global.enemy_lineup.weight"]
    assert table.shape == (D.HERO_VOCAB, 4) and np.isfinite(table).all()
    fragments = list(read_rollouts(run / "rollouts"))
    assert fragments and all(f.schema_version == 3 for f in fragments)
    v3 = load_schema(3)
    key = next(k for k in fragments[0].arrays if k.endswith("global.cat"))
    enemy = fragments[0].arrays[key][..., v3.group("global").cat_columns()["enemy_lineup"]]
    assert (enemy[..., 0] > 0).all() and (enemy[..., 1:] == 0).all()  # 1v1: one enemy, four empty slots
