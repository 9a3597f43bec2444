"""surgery add-action and add-hero: the model grows an action (or hero-id vocabularies) and computes exactly what
it did on old games; the new action has zero probability wherever the game masks it."""

from __future__ import annotations

import json

import pytest
import torch
from shared_helpers import assert_bad_input
from surgery_helpers import invoke, make_net, run_json, schema_of, tiny_cfg, v2_dict
from test_ops import TEAMS, T, child_net, max_delta, outputs

from fivectl.errors import BadInput
from fivectl.model.synthetic import random_obs
from fivectl.sim import get_change, hero_vocab, missing_surgery
from fivectl.store.checkpoint import CheckpointStore
from fivectl.surgery.add_action import plan_add_action, plan_add_hero
from fivectl.surgery.obsmap import obs_for_schema


@pytest.mark.parametrize("team_size", [1, 2])
def test_add_action_keeps_the_function_on_old_data_and_masks_the_new_action_to_zero(team_size):
    old = schema_of(v2_dict())
    cfg = tiny_cfg()
    parent = make_net(old, cfg, team_size)
    plan = plan_add_action(old, cfg, team_size, "item4", bias=3.0)
    new = plan.schema_after
    n = old.action.n_primary
    assert new.action.primary == (*old.action.primary, "item4") and new.action.n_primary == n + 1
    child = child_net(plan, parent)
    obs = random_obs(old, (T, 2 * team_size * TEAMS), torch.Generator().manual_seed(1))
    grown = obs_for_schema(obs, old, new, torch.Generator().manual_seed(2))
    assert not grown["action_mask"][..., n].any() and grown["action_mask"][..., :n].equal(obs["action_mask"])
    assert max_delta(outputs(parent, obs), outputs(child, grown)) <= 1e-5
    # choosing item4 where it is masked: probability exactly 0 (log-probability at the masked logit)
    b = obs["action_mask"].shape[1]
    pick = torch.zeros(T, b, 4, dtype=torch.long)
    pick[..., 0] = n
    with torch.no_grad():
        masked = child.evaluate(grown, pick, child.initial_state(b), torch.ones(T, b, dtype=torch.bool)).logprob
        assert torch.exp(masked).max() == 0.0
        # available: a real choice (logit = the bias; zero weights), as likely wherever the rest is the same
        grown["action_mask"][..., n] = True
        free = child.evaluate(grown, pick, child.initial_state(b), torch.ones(T, b, dtype=torch.bool)).logprob
    assert torch.isfinite(free).all() and (free > -60).all()
    head = child.heads["primary"]
    assert float(head.bias[n].detach()) == 3.0 and float(head.weight[n].detach().abs().max()) == 0.0


def test_add_hero_grows_every_hero_vocabulary_and_keeps_the_function():
    old = schema_of(v2_dict())
    cfg = tiny_cfg()
    parent = make_net(old, cfg, 2)
    change = get_change("new-hero")
    assert missing_surgery(change, old, "r") == f"fivectl surgery add-hero r --vocab {change.needs_hero_vocab} --out r-new-hero"
    plan = plan_add_hero(old, cfg, 2, change.needs_hero_vocab)
    assert hero_vocab(plan.schema_after) == change.needs_hero_vocab and missing_surgery(change, plan.schema_after) is None
    child = child_net(plan, parent)
    obs = random_obs(old, (T, 2 * 2 * TEAMS), torch.Generator().manual_seed(3))
    assert max_delta(outputs(parent, obs), outputs(child, obs_for_schema(obs, old, plan.schema_after, None))) <= 1e-5
    table = child.encoder.embeds["self"]["hero_id"].weight
    assert table.shape[0] == change.needs_hero_vocab
    with pytest.raises(BadInput, match="only grows"):
        plan_add_hero(old, cfg, 2, hero_vocab(old))


def test_add_action_cli_converts_every_version_verifies_and_trains_on(parent_run, tmp_path):
    out = tmp_path / "item4"
    result = invoke("surgery", "add-action", str(parent_run), "--action", "item4", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["operation"] == "add-action" and report["args"]["action"] == "item4"
    names = {row["name"] for row in report["changed"]}
    assert {"heads.primary.weight", "heads.primary.bias", "encoder.embeds.prev_action.primary.weight"} <= names
    assert run_json(out)["schema"]["action"]["primary"][-1] == "item4"
    store = CheckpointStore(out / "checkpoints.zarr")
    for version in store.versions():  # the opponent pool went through the same surgery
        attrs = store.load_attrs(version)
        assert "item4" in json.loads(attrs["schema"])["action"]["primary"]
    verified = invoke("surgery", "verify", str(out))
    assert verified.exit_code == 0 and "within 1e-05" in verified.stdout, verified.output
    trained = invoke("train", "--run", str(out), "--resume", "--max-samples", "450", "--json")
    assert trained.exit_code == 0, trained.output
    primary = run_json(out)["schema"]["action"]["primary"]
    assert store.load().arrays["model"]["heads.primary.weight"].shape[0] == len(primary)
    # the operated model plays matches: the game encodes the checkpoint's own schema (with item4)
    played = invoke("evaluate", "match", f"{out}@latest", "random", "--games", "2", "--json")
    assert played.exit_code == 0, played.output
    assert json.loads(played.stdout)["games"] == 2
    # against its parent, which reads v2 without item4, it cannot share a game: one line, exit 2
    mixed = invoke("evaluate", "match", f"{out}@latest", f"{parent_run}@latest", "--games", "2")
    assert_bad_input(mixed, "different observation schemas")
    # and the storm maul can be annealed into it: the guard's baseline calibrates a bot under the change, in games
    # of scripted agents only that still need the run's item4
    started = invoke(
        "anneal", "start", str(out), "--change", "storm-maul", "--json",
        "--set", "eval.every_versions=2", "--set", 'eval.references=["random", "bot:passive"]',
        "--set", "eval.games=2", "--set", "anneal.guard_games=2",
    )  # fmt: skip
    assert started.exit_code == 0, started.output
    assert json.loads(started.stdout)["baseline"]["games"] == 4


@pytest.mark.parametrize(
    ("action", "needles"),
    [("itme4", ("no such primary action", "did you mean item4")), ("item1", ("already has it",))],
)
def test_add_action_bad_input_is_one_line_and_writes_nothing(parent_run, tmp_path, action, needles):
    out = tmp_path / "bad"
    assert_bad_input(invoke("surgery", "add-action", str(parent_run), "--action", action, "--out", str(out)), *needles)
    assert not out.exists() and not list(tmp_path.glob(".bad*"))


def test_add_hero_cli_verifies_and_refuses_a_vocabulary_that_does_not_grow(parent_run, tmp_path):
    bad = tmp_path / "small"
    assert_bad_input(invoke("surgery", "add-hero", str(parent_run), "--vocab", "18", "--out", str(bad)), "only grows")
    assert not bad.exists()
    out = tmp_path / "hero"
    result = invoke("surgery", "add-hero", str(parent_run), "--vocab", "19", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "encoder.embeds.self.hero_id.weight" in result.stdout
    verified = invoke("surgery", "verify", str(out))
    assert verified.exit_code == 0 and "within 1e-05" in verified.stdout, verified.output
    fields = {f["name"]: f for g in run_json(out)["schema"]["groups"] for f in g["fields"] if f["name"] == "hero_id"}
    assert fields["hero_id"]["vocab"] == 19
