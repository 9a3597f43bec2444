from __future__ import annotations

import pytest
from model_helpers import schema_v1


@pytest.fixture
def schema():
    return schema_v1()
