"""``fivectl runs list|show|plot``: what runs exist and how they are doing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fivectl.cli.common import handle_errors, out_console, print_json
from fivectl.store.rundir import find_runs

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
