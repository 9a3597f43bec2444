"""``fivectl runs list|show|plot|compare``: what runs exist and how they are doing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fivectl.cli.common import handle_errors, out_console, print_json
from fivectl.store.compare import DEFAULT_METRICS, compare_runs, plot_compared
from fivectl.store.rundir import INIT_FROM, RunDir, find_runs
from fivectl.store.summary import plot_learning_curves, run_summary
from fivectl.surgery.lineage import describe, surgeries

app = typer.Typer(help="List and inspect run directories.", no_args_is_help=True)


@app.command("list")
@handle_errors
def list_runs(
    root: Annotated[Path, typer.Argument(help="Folder holding runs.")] = Path("runs"),
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the runs under a folder (default runs/)."""
    runs = find_runs(root)
    rows = [
        {
            "path": str(r.path),
            "name": r.meta.get("name", ""),
            "created": r.meta.get("created", ""),
            "fivectl_version": r.meta.get("fivectl_version", ""),
            "schema_version": r.meta.get("schema_version"),
            "latest_version": r.meta.get("latest_version"),
            "samples": r.meta.get("samples"),
            "lineage": len(r.meta.get("lineage", [])),
        }
        for r in runs
    ]
    if as_json:
        print_json(rows)
        return
    if not rows:
        out_console.print(f"no runs under {root}")
        return
    table = Table(title=f"runs under {root}")
    for col in ("path", "name", "created", "schema", "version", "samples", "lineage"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["path"],
            r["name"],
            r["created"],
            f"v{r['schema_version']}" if r["schema_version"] else "-",
            str(r["latest_version"]) if r["latest_version"] is not None else "-",
            f"{r['samples']:,}" if r["samples"] else "-",
            str(r["lineage"]),
        )
    out_console.print(table)


NEWEST_SHOWN = 3  # checkpoints listed one by one in `runs show` (the rest are summarised)
MILESTONES_SHOWN = 8  # more milestones than this are shown as a count and a range

RunArg = Annotated[Path, typer.Argument(help="A run directory, e.g. runs/quickstart.")]


@app.command("show")
@handle_errors
def show(
    run: RunArg,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Versions, samples, samples/s, staleness, reuse, the latest metrics and a summary of the checkpoints (the
    newest few in detail; --json lists every one)."""
    summary = run_summary(RunDir.open(run))
    if as_json:
        print_json(summary)
        return
    out_console.print(_overview_table(summary))
    stage, depth = summary["first_stage"], 0
    while stage is not None:  # [curriculum]: the stage this run starts from, and the stage before it
        out_console.print(f"{'  ' * depth}{_first_stage_line(stage)}", highlight=False, soft_wrap=True)
        stage, depth = stage["first_stage"], depth + 1
    for entry in summary["lineage"]:
        if entry.get("event") == INIT_FROM:  # train --init-from: where the network started
            fresh = f" (fresh: {', '.join(entry['fresh'])})" if entry.get("fresh") else ""
            out_console.print(
                f"started from: {entry['source_name']}@{entry['source_version']}{fresh}", highlight=False
            )
    chain = surgeries(summary["lineage"])
    if chain:  # oldest first: how this run came to be from its ancestors
        out_console.print("lineage:", style="bold")
        for entry in chain:
            out_console.print(f"  {describe(entry)}", highlight=False, soft_wrap=True)
    if summary["latest_metrics"]:
        out_console.print(_metrics_table(summary["latest_metrics"]))
    else:
        out_console.print("metrics: none yet")
    if summary["checkpoints"]:
        out_console.print(_checkpoint_summary_table(summary["checkpoint_summary"]))
        out_console.print(_checkpoints_table(summary["checkpoints"][-NEWEST_SHOWN:]))
    else:
        out_console.print("checkpoints: none yet")


@app.command("plot")
@handle_errors
def plot(
    run: RunArg,
    out: Annotated[
        Path | None, typer.Option("--out", help="PNG to write (default RUN/logs/learning_curves.png).")
    ] = None,
    x: Annotated[
        str,
        typer.Option(
            "--x",
            help="x axis: samples (comparable across machines) or minutes of training (depend on the CPU).",
        ),
    ] = "samples",
) -> None:
    """Write a PNG of the learning curves of a run, against samples (default) or minutes."""
    path = plot_learning_curves(RunDir.open(run), out, x)
    out_console.print(f"wrote {path}")


@app.command("compare")
@handle_errors
def compare(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (seeds of a recipe, or one idea each).")],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help=f"A metrics column; repeat for several (default: {', '.join(DEFAULT_METRICS)}).",
        ),
    ] = None,
    every: Annotated[
        int | None,
        typer.Option("--every", help="Samples between rows (default: 10 rows over the longest run)."),
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Also write a PNG of the curves here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Metrics of several runs side by side at the same samples: each run's last value at or before every mark,
    and its last value (compare seeds and ideas per sample, which does not depend on the CPU)."""
    opened = [RunDir.open(r) for r in runs]
    metrics = list(metric or DEFAULT_METRICS)
    comparison = compare_runs(opened, metrics, every)
    if plot is not None:
        comparison["plot"] = str(plot_compared(comparison, opened, metrics, plot))
    if as_json:
        print_json(comparison)
        return
    for name in metrics:
        out_console.print(_comparison_table(comparison, name))
    if plot is not None:
        out_console.print(f"wrote {comparison['plot']}")


def _comparison_table(comparison: dict, metric: str) -> Table:
    table = Table(title=f"{metric} by samples")
    table.add_column("samples", justify="right")
    entries = comparison["runs"]
    names = [Path(entry["path"]).name for entry in entries]
    if len(set(names)) < len(names):  # runs/a/run and runs/b/run: the paths tell them apart
        names = [entry["path"] for entry in entries]
    for name in names:
        table.add_column(name, justify="right")
    for i, mark in enumerate(comparison["marks"]):
        table.add_row(f"{mark:,}", *(_fmt(entry["metrics"][metric][i]) for entry in entries))
    table.add_row("last", *(f"{_fmt(e['last'][metric])} at {e['samples']:,}" for e in entries))
    return table


def _first_stage_line(stage: dict) -> str:
    asked = stage["samples_asked"]
    trained = f"{stage['samples']:,}" + (f" of {asked:,} samples" if asked else " samples")
    done = " (done)" if asked and stage["samples"] >= asked else ""
    latest = f"v{stage['latest_version']}" if stage["latest_version"] is not None else "no version yet"
    return f"first stage: {stage['name']} in {stage['path']}, {trained}{done}, latest {latest}"


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e5 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def _overview_table(s: dict) -> Table:
    table = Table(title=f"run {s['path']}", show_header=False)
    table.add_column("key", style="cyan")
    table.add_column("value")
    versions = s["versions"]
    rows = [
        ("name", s["name"]),
        ("schema", f"v{s['schema_version']}" if s["schema_version"] else None),
        ("latest version", s["latest_version"] if s["latest_version"] is not None else "none yet"),
        ("checkpoints", f"{len(versions)}" if versions else "none yet"),
        ("iterations", s["iterations"]),
        ("samples", s["samples"]),
        ("samples/s", s["samples_per_s"]),
        ("staleness (mean)", s["staleness_mean"]),
        ("sample reuse", s["sample_reuse"]),
        ("lineage events", len(s["lineage"])),
    ]
    for key, value in rows:
        table.add_row(key, _fmt(value))
    return table


def _metrics_table(last: dict) -> Table:
    table = Table(title=f"latest metrics (iteration {_fmt(last.get('iteration'))})", show_header=False)
    table.add_column("metric", style="cyan")
    table.add_column("value")
    for key, value in last.items():
        if key != "iteration":
            table.add_row(key, _fmt(value))
    return table


def _checkpoint_summary_table(c: dict) -> Table:
    table = Table(title="checkpoints", show_header=False)
    table.add_column("key", style="cyan")
    table.add_column("value")
    table.add_row("count", f"{c['count']:,}")
    table.add_row("versions", f"v{c['first']}-v{c['last']}" if c["count"] > 1 else f"v{c['first']}")
    table.add_row("spacing", _spacing(c["spacing"]))
    table.add_row("milestones", _version_list(c["milestones"]))
    table.add_row("model only", f"{c['model_only']:,} (opponent-pool members)" if c["model_only"] else "none")
    if c["unreadable"]:
        table.add_row("unreadable", _version_list(c["unreadable"]))
    table.add_row("size", _size(c["bytes"]))
    return table


def _spacing(gaps: dict | None) -> str:
    if gaps is None:
        return "-"
    if gaps["min"] == gaps["max"]:
        return f"every {gaps['min']:,} versions"
    return f"{gaps['min']:,}-{gaps['max']:,} versions apart (median {gaps['median']:g})"


def _version_list(versions: list[int]) -> str:
    if not versions:
        return "none"
    if len(versions) <= MILESTONES_SHOWN:
        return ", ".join(f"v{v}" for v in versions)
    return f"{len(versions)}: v{versions[0]}, v{versions[1]}, ..., v{versions[-1]}"


def _checkpoints_table(checkpoints: list[dict]) -> Table:
    table = Table(title=f"newest {len(checkpoints)} checkpoint(s)")
    for col in ("version", "iteration", "samples", "size", "milestone", "kept"):
        table.add_column(col)
    for c in checkpoints:
        table.add_row(
            str(c["version"]),
            _fmt(c.get("iteration")),
            _fmt(c.get("samples")),
            _size(c["bytes"]),
            "yes" if c["milestone"] else "",
            "unreadable" if c.get("readable") is False else "model only" if c.get("model_only") else "whole",
        )
    return table
