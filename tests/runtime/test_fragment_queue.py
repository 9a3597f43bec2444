"""Rollout worker processes: how many fragments can wait for the learner (the queue depth behind staleness)."""

from __future__ import annotations

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.runtime.fragment_queue import ProcessSource
from fivectl.runtime.fragment_source import FragmentSourceOptions
from fivectl.runtime.params import ParameterStore
from fivectl.schema import load_schema


def test_one_slot_per_worker_means_a_worker_waits_until_the_learner_releases_its_fragment(tiny_recipe):
    recipe = load_recipe(tiny_recipe, ["train.workers=2", "train.slots_per_worker=1"])
    schema = load_schema(1)
    net = PolicyNet(schema, recipe.model, 1)
    params = ParameterStore.for_model(net)
    params.publish(net, 0, team_spirit=0.0)
    source = ProcessSource(
        FragmentSourceOptions(
            recipe, schema, params, seed=1, workers=2, slots_per_worker=recipe.train.slots_per_worker
        )
    )
    try:
        assert source.n_slots == 2
        first = [source.get(timeout=120) for _ in range(2)]
        assert all(got is not None for got in first)
        assert {int(views["header"][1]) for _, views in first} == {0, 1}
        # Both workers' only slots are held: nothing more can be queued, however long we wait.
        assert source.get(timeout=3) is None
        slot, views = first[0]
        worker = int(views["header"][1])
        source.release(slot)
        again = source.get(timeout=120)
        assert again is not None and int(again[1]["header"][1]) == worker
        source.release(again[0])
        source.release(first[1][0])
    finally:
        source.close()
        params.close(unlink=True)
