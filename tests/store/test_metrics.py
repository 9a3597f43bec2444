"""Metrics log: atomic appends, unified columns, truncate on resume, compaction, no-op TensorBoard."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fivectl.errors import BadInput
from fivectl.store.metrics import MetricsLog


def rows(first: int, last: int) -> list[dict]:
    return [{"iteration": i, "policy_loss": 0.5 * i, "samples": 100 * i} for i in range(first, last + 1)]


def test_append_and_read_unifies_columns(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path)
    assert log.read().num_rows == 0 and log.last_iteration() is None
    log.append(rows(1, 3))
    log.append([{"iteration": 4, "policy_loss": np.float32(2.0), "win_rate": 0.75}])
    t = log.read()
    assert t["iteration"].to_pylist() == [1, 2, 3, 4]
    assert t["win_rate"].to_pylist() == [None, None, None, 0.75]
    assert t["samples"].to_pylist() == [100, 200, 300, None]
    assert log.last_iteration() == 4


def test_truncate_after_makes_resume_continue_without_gaps_or_duplicates(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path)
    log.append(rows(1, 5))
    log.append(rows(6, 8))
    log.append(rows(9, 9))
    assert log.truncate_after(6) == 3
    log.append(rows(7, 10))  # the resumed trainer redoes 7..10
    its = log.read()["iteration"].to_pylist()
    assert its == list(range(1, 11))
    assert log.truncate_after(100) == 0


def test_compact_merges_files_and_keeps_rows(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path)
    for i in range(1, 6):
        log.append(rows(i, i))
    before = log.read()
    merged = log.compact()
    assert merged is not None and [p.name for p in tmp_path.iterdir()] == [merged.name]
    assert log.read().equals(before)


def test_leftovers_of_a_crashed_compaction_do_not_duplicate_rows(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path)
    log.append(rows(1, 2))
    log.append(rows(3, 4))
    log._write(log.read())  # the merged file was written, then the process died before removing the old ones
    assert log.read()["iteration"].to_pylist() == [1, 2, 3, 4]


def test_rows_need_an_iteration(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="iteration"):
        MetricsLog(tmp_path).append([{"loss": 1.0}])


def test_tensorboard_is_a_clean_no_op_without_the_package(tmp_path: Path) -> None:
    try:
        import tensorboard  # noqa: F401

        has_tb = True
    except ImportError:
        has_tb = False
    log = MetricsLog(tmp_path / "m", tensorboard_dir=tmp_path / "tb")
    assert log.tensorboard_enabled is has_tb
    log.append(rows(1, 2))
    log.close()
    assert log.read().num_rows == 2
    assert (tmp_path / "tb").exists() is has_tb
