"""What a child run's ``run.json`` says about where it came from (docs/ARCHITECTURE.md, Surgery).

The child's ``lineage`` is its parent's lineage followed by one entry for this surgery: the parent run (its path
relative to the child's directory, so the pair can move together, and its name) and version, the operation and
its arguments, the schema and the parameter count before and after, the versions converted, and the time. Older
entries are rewritten so their parent paths stay relative to the child. ``chain`` reads it back for ``runs show``
and ``surgery verify``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fivectl.store.rundir import RunDir, now_iso
from fivectl.surgery.schemas import schema_label

if TYPE_CHECKING:
    from fivectl.surgery.plan import Plan
    from fivectl.surgery.run import Parent

EVENT = "surgery"


def relative_to(target: Path, base: Path) -> str:
    return os.path.relpath(target.resolve(), base.resolve())


def lineage_for_child(
    parent: Parent, plan: Plan, out: Path, versions: list[int], counts: tuple[int, int]
) -> list[dict[str, Any]]:
    inherited = []
    for entry in parent.run.meta.get("lineage", []):
        entry = dict(entry)
        if "parent_run" in entry:
            entry["parent_run"] = relative_to(parent.run.path / entry["parent_run"], out)
        inherited.append(entry)
    args = {k: v for k, v in plan.args.items() if k not in ("schema_after",)}
    entry = {
        "time": now_iso(),
        "event": EVENT,
        "operation": plan.operation,
        "args": args,
        "parent_run": relative_to(parent.run.path, out),
        "parent_name": parent.run.path.name,
        "parent_version": parent.version,
        "version": parent.version,
        "versions_converted": versions,
        "schema_before": schema_label(plan.schema_before),
        "schema_after": schema_label(plan.schema_after),
        "parameters_before": counts[0],
        "parameters_after": counts[1],
        "exact": plan.exact,
    }
    return [*inherited, entry]


def surgeries(lineage: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The surgery entries of a run's lineage (``run.json``), oldest first."""
    return [e for e in lineage if e.get("event") == EVENT]


def last_surgery(run: RunDir) -> dict[str, Any] | None:
    found = surgeries(run.meta.get("lineage", []))
    return found[-1] if found else None


def parent_path(run: RunDir, entry: dict[str, Any]) -> Path:
    return (run.path / entry["parent_run"]).resolve()


def describe(entry: dict[str, Any]) -> str:
    """One line: ``v12 of parent --add-obs schema 3--> v12 (params 1.2M -> 1.3M)``."""
    args = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in entry.get("args", {}).items() if k != "added")
    before, after = entry.get("schema_before", {}), entry.get("schema_after", {})
    schema = (
        f"schema v{before.get('version')} -> v{after.get('version')}"
        if before.get("version") != after.get("version")
        else f"schema v{after.get('version')}"
    )
    return (
        f"{entry.get('parent_name')}@{entry.get('parent_version')} -> {entry.get('operation')} {args}".rstrip()
        + f" -> v{entry.get('version')} ({schema}, parameters {entry.get('parameters_before'):,} -> "
        f"{entry.get('parameters_after'):,}, {entry.get('time')})"
    )
