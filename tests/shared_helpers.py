"""Pieces several test folders share (importable as ``shared_helpers``: pytest puts ``tests/`` on the path)."""

from __future__ import annotations

# A tiny training recipe: seconds per run, every code path of the trainer.
TINY = """
name = "tiny"
[game]
team_size = 1
lanes = 1
time_limit_s = 30.0
[model]
unit_embed = 8
unit_hidden = 16
cat_embed = 4
grid_channels = 4
fc_size = 32
lstm_size = 16
[train]
seed = 3
workers = 0
games_per_worker = 2
fragment_length = 16
bptt = 8
batch_windows = 8
publish_every = 1
checkpoint_every = 2
keep_last = 3
milestone_every = 0
rollout_save_every = 2
"""


def assert_bad_input(result, *needles: str) -> None:
    """A CLI result is a bad-input error: exit code 2, one line of output, naming each of ``needles``."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for needle in needles:
        assert needle in result.output, result.output


def require_optional(name: str, available: bool, install: str) -> None:
    """Skip a test that needs an optional part (a pip extra, a system package) when it is absent, with the reason.

    On a fresh machine ``make test`` passes without the optional parts. CI lists the parts it installs in
    ``FIVECTL_REQUIRE`` (comma-separated, e.g. ``chromium,ray,pettingzoo``): a listed part that is missing fails
    the test instead, so CI cannot go green by skipping what it promised to test.
    """
    import os

    import pytest

    if available:
        return
    required = {part.strip() for part in os.environ.get("FIVECTL_REQUIRE", "").split(",") if part.strip()}
    message = f"{name} is not installed ({install})"
    if name in required:
        pytest.fail(f"{message}, and FIVECTL_REQUIRE lists it")
    pytest.skip(message)
