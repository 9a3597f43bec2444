from __future__ import annotations

import pytest
from model_helpers import schema_v1


@pytest.fixture
def schema():
    return schema_v1()


@pytest.fixture
def kernels_off(monkeypatch):
    """Every layer on its reference torch path (as ``FIVECTL_MODEL_KERNELS=0`` does)."""
    from fivectl.model import kernels

    monkeypatch.setattr(kernels, "ENABLED", False)
