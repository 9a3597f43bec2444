"""Agent specs, the registry and the random agent's sampling."""

from __future__ import annotations

import numpy as np
import pytest

from fivectl.errors import BadInput
from fivectl.evaluate.agents import (
    RandomAgent,
    known_agent_specs,
    parse_agent,
    register_agent_kind,
    sample_masked,
    select_team,
    team_agent_index,
)


def test_builtin_specs():
    assert isinstance(parse_agent("random"), RandomAgent)
    assert parse_agent(" random ").spec == "random"
    assert {"random", "bot:passive", "bot:easy", "bot:medium"} <= set(known_agent_specs())


def test_unknown_spec_suggests_and_lists_known_ones():
    with pytest.raises(BadInput) as e:
        parse_agent("randon")
    msg = str(e.value)
    assert "did you mean 'random'" in msg and "bot:easy" in msg and "\n" not in msg


def test_registered_kind_is_parsed_without_changing_the_module():
    made = []

    def factory(spec):
        made.append(spec)
        return RandomAgent(spec)

    register_agent_kind("test-kind", "test-kind:", factory, examples=("test-kind:NAME",))
    try:
        assert parse_agent("test-kind:x").spec == "test-kind:x"
        assert made == ["test-kind:x"]
        assert "test-kind:NAME" in known_agent_specs()
    finally:
        from fivectl.evaluate import agents

        agents._KINDS.pop("test-kind")


def test_team_rows_follow_agent_order():
    np.testing.assert_array_equal(team_agent_index(np.array([0, 1]), 3), [[0, 1, 2], [3, 4, 5]])
    obs = {"x": np.arange(2 * 4).reshape(2, 4)}  # 2 games, 2v2
    np.testing.assert_array_equal(select_team(obs, np.array([1, 0]), 2)["x"], [[2, 3], [4, 5]])


def test_sample_masked_is_uniform_over_valid_entries():
    rng = np.random.default_rng(0)
    mask = np.zeros((20000, 5), dtype=bool)
    mask[:, [1, 3, 4]] = True
    picks = sample_masked(mask, rng)
    assert set(np.unique(picks)) == {1, 3, 4}
    np.testing.assert_allclose(np.bincount(picks, minlength=5)[[1, 3, 4]] / len(picks), 1 / 3, atol=0.02)
    assert sample_masked(np.zeros((2, 3), dtype=bool), rng).tolist() == [0, 0]
