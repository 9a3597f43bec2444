"""Fixtures: short recorded games (``replay_helpers.record_games``), played once per test session."""

from __future__ import annotations

import pytest
from replay_helpers import Recorded, record_games


@pytest.fixture(scope="session")
def recorded(tmp_path_factory) -> Recorded:
    return record_games(tmp_path_factory.mktemp("replays"))
