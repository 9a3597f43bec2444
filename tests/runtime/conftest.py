"""Running the real CLI in a subprocess (the kill tests need a real process)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def fivectl(*args: str, timeout: float = 240, **kwargs) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (the kill tests need a real process)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("FIVECTL_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "fivectl.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kwargs,
    )


@pytest.fixture
def cli():
    return fivectl
