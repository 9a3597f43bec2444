"""The learner publishes each version with the schedule values its workers need (runtime/publishing.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fivectl.config import recipe_from_dict
from fivectl.model import PolicyNet
from fivectl.runtime.publishing import Publisher
from fivectl.runtime.run_state import Counters
from fivectl.schema import load_schema
from fivectl.selfplay.pool import OpponentPool


def test_each_version_carries_the_lane_penalty_and_team_spirit_at_its_samples():
    recipe = recipe_from_dict(
        {
            "game": {"team_size": 1},
            "model": {"lstm_size": 4},
            "train": {"workers": 0},
            "reward": {
                "off_lane": {"points": [[0, -0.1], [1000, 0.0]], "unit": "samples"},
                "team_spirit": {"points": [[0, 0.2], [1000, 0.6]], "unit": "samples"},
            },
        }
    )
    net = PolicyNet(load_schema(1), recipe.model, 1)
    state = SimpleNamespace(model=net, counters=Counters(), pool=OpponentPool(recipe.selfplay))
    anneal = SimpleNamespace(fraction=lambda: 0.0)
    publisher = Publisher.open(recipe, state, anneal, torch.device("cpu"), stopping=lambda: False)
    reader = PolicyNet(load_schema(1), recipe.model, 1)
    _, first = publisher.params.read_into(reader)
    state.counters.samples, state.counters.version = 750, 1
    publisher.publish()
    version, later = publisher.params.read_into(reader)
    assert first["off_lane"] == pytest.approx(-0.1) and first["team_spirit"] == pytest.approx(0.2)
    assert version == 1 and later["off_lane"] == pytest.approx(-0.025) and later["team_spirit"] == pytest.approx(0.5)
