"""Per-game variants in a rollout worker's batch: each game draws the change at its start with the published
fraction, deterministically per seed, and every fragment records the variant of each game at each step."""

from __future__ import annotations

import numpy as np

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.runtime.buffers import FragmentSlots, recipe_fragment_specs
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.worker import RolloutWorker
from fivectl.schema import load_schema

GAMES = 8
STEPS = 32


def worker_fragments(change: str, fraction: float, fragments: int = 2, kept: str = "") -> list[dict]:
    overrides = [
        "game.time_limit_s=2",  # 15 decisions a game: several games start in each fragment
        f"train.games_per_worker={GAMES}",
        "train.game_phases=1",
        f"train.fragment_length={STEPS}",
        "model.decide_every=1",
        f'anneal.change="{change}"',
    ]
    if kept:
        overrides.append(f'anneal.kept=["{kept}"]')
    recipe = load_recipe("recipes/quickstart.toml", overrides)
    schema = load_schema(recipe.model.schema_version)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    params = ParameterStore.for_model(net, shared=False)
    params.publish(net, 0, team_spirit=0.0, change_fraction=fraction)
    worker = RolloutWorker(recipe, schema, params, seed=5)
    out = []
    for _ in range(fragments):
        views = FragmentSlots(recipe_fragment_specs(recipe, schema), 1, shared=False).slots[0]
        worker.fill(views)
        out.append({k: v.copy() for k, v in views.items()})
    return out


def test_games_draw_the_change_with_the_published_fraction_and_fragments_record_it():
    frs = worker_fragments("fast-waves", 0.5)
    variant = np.concatenate([f["variant"] for f in frs])  # [T, G]
    assert variant.any() and not variant.all()  # some games with the change, some without
    first = np.concatenate([f["first"] for f in frs])[:, ::2]  # per game (1v1: agents 0, 2, ...)
    # a game keeps its variant from its first step to its end: it changes only where a new game starts
    changed = variant[1:] != variant[:-1]
    assert not (changed & ~first[1:]).any()
    # deterministic for the seed
    again = np.concatenate([f["variant"] for f in worker_fragments("fast-waves", 0.5)])
    assert (again == variant).all()


def test_fraction_zero_and_one_and_a_kept_change():
    assert not np.concatenate([f["variant"] for f in worker_fragments("fast-waves", 0.0, 1)]).any()
    assert np.concatenate([f["variant"] for f in worker_fragments("fast-waves", 1.0, 1)]).all()
    kept = worker_fragments("", 0.0, 1, kept="fast-waves")  # part of the run's game: every game
    assert np.concatenate([f["variant"] for f in kept]).all()
