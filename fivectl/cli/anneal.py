"""``fivectl anneal``: roll a change of the game into a running experiment, with a TrueSkill guard (paper B)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fivectl.cli.common import err_console, handle_errors, out_console, print_json
from fivectl.errors import BadInput

app = typer.Typer(
    help="Anneal a change of the game (a rule, an item, a hero) into a run: the fraction of training games that "
    "run it rises from 0 to 1, and a TrueSkill guard reverts and slows the ramp when the rating drops.",
    no_args_is_help=True,
)

RunArg = Annotated[str, typer.Argument(help="The run directory.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


@app.callback()
def anneal() -> None:
    """Anneal a change of the game into a run."""


@app.command("list")
@handle_errors
def list_changes(as_json: JsonOpt = False) -> None:
    """The registered changes of the game, with what each does and the surgery it needs."""
    from fivectl.anneal.run import registry

    changes = registry()
    if as_json:
        print_json(changes)
        return
    width = max(len(c["name"]) for c in changes)
    for c in changes:
        needs = f"needs action {c['needs_action']}" if c["needs_action"] else ""
        if c["needs_hero_vocab"]:
            needs = f"needs hero vocabulary {c['needs_hero_vocab']}"
        out_console.print(
            f"[bold]{c['name']:<{width}}[/]  {c['kind']:<6}  {c['summary']}"
            + (f"  ({needs})" if needs else ""),
            highlight=False,
            soft_wrap=True,
        )
        out_console.print(f"  {c['doc']}", style="dim", highlight=False, markup=False)


@app.command("start")
@handle_errors
def start(
    run: RunArg,
    change: Annotated[str, typer.Option("--change", help="The change to anneal in (fivectl anneal list).")],
    over: Annotated[
        float | None, typer.Option("--over", help="Samples for the fraction to go from 0 to 1 (default 5e6).")
    ] = None,
    guard: Annotated[
        float | None,
        typer.Option(
            "--guard", help="TrueSkill drop below the start version, both under the change, that reverts (default 2.0)."
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Recipe override kept by the run, e.g. anneal.guard_every=20 (versions between the guard's "
            "evaluations) or another anneal.* or eval.* key.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Start annealing a change into RUN; the next `fivectl train --run RUN --resume` mixes it in.

    First RUN@latest is rated under the change (the guard's baseline, then a reference of the guard's league).
    The guard rates a version every anneal.guard_every versions; by default eval.every_versions when set, else
    the run's milestones (train.milestone_every), else every 10th checkpoint.
    """
    from fivectl.anneal.run import start as start_anneal

    if over is not None and over <= 0:
        raise BadInput(f"--over: must be > 0 samples, got {over:g}")
    if guard is not None and guard <= 0:
        raise BadInput(f"--guard: must be > 0 TrueSkill, got {guard:g}")
    with err_console.status(
        f"rating {run}@latest under {change}: the guard's baseline (TrueSkill against the references)"
    ):
        started = start_anneal(run, change, over, guard, list(set_ or []))
    if as_json:
        print_json(started.to_json())
        return
    b = started.baseline
    out_console.print(
        f"anneal of {started.change} into {run}: 0 -> 1 over {started.over:,.0f} samples; the guard reverts below "
        f"{b['mu'] - started.guard:.1f} (v{b['version']} rated {b['mu']:.1f} +- {b['sigma']:.1f} under it in "
        f"{b.get('games', 0)} games, now a reference of the guard's league; guard {started.guard:g})",
        highlight=False,
        soft_wrap=True,
    )
    out_console.print(
        f"guard cadence: a version rated under the change every {started.every_versions} versions "
        f"(from {started.every_versions_from}; --set anneal.guard_every=N changes it)",
        highlight=False,
        soft_wrap=True,
    )
    out_console.print(f"next: fivectl train --run {run} --resume", highlight=False, soft_wrap=True)


@app.command("status")
@handle_errors
def status(
    run: RunArg,
    as_json: JsonOpt = False,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write a PNG: fraction over samples, guard ratings, reverts."),
    ] = None,
) -> None:
    """The anneal under way (or the last one): fraction, ramp speed, guard evaluations and reverts."""
    from fivectl.anneal.run import status as anneal_status

    info = anneal_status(run)
    if plot is not None:
        from fivectl.anneal.plot import plot_status

        info["plot"] = str(plot_status(info, plot))
    if as_json:
        print_json(info)
        return
    show_status(info)


def show_status(info: dict) -> None:
    def say(text: str) -> None:
        out_console.print(text, highlight=False, soft_wrap=True, markup=False)

    b = info["baseline"]
    say(f"anneal of {info['change']} in {info['run']}: {info['state']}, started {info['started']}")
    s = info["settings"]
    if s:
        say(
            f"  ramp 0 -> 1 over {s['over_samples']:,.0f} samples, guard {s['guard']:g} below the start "
            f"(v{b['version']} rated {b['mu']:.1f} under the change), slowdown x{s['slowdown']:g} per revert"
        )
    if not info["trained"]:
        say("  not trained yet: fraction 0 (fivectl train --run RUN --resume starts the ramp)")
    else:
        say(
            f"  fraction {info['fraction']:.3f} at {info['samples']:,} samples (started at {info['start_samples']:,}"
            f", v{info['start_version']}); speed {info['speed']:g}, last good fraction {info['last_good']:.3f}, "
            f"{info['reverts']} revert(s)"
        )
        for e in info["guard_history"]:
            say(
                f"  guard v{e['version']}: trained at fraction {e['fraction']:.3f}, TrueSkill {e['mu']:.1f} "
                f"± {e['sigma']:.1f} ({-e['drop']:+.1f} vs start): {e['action']}"
                + (
                    f" -> fraction {e['fraction_after']:.3f}, speed {e['speed_after']:g}"
                    if e["action"] == "revert"
                    else ""
                )
            )
        if info.get("pending_guard"):
            say(f"  guard: v{info['pending_guard']['version']} being rated")
    if info["kept"]:
        say(f"  part of the run's game: {', '.join(info['kept'])}")
    if info.get("plot"):
        say(f"  plot: {info['plot']}")


@app.command("stop")
@handle_errors
def stop(
    run: RunArg,
    keep: Annotated[
        bool, typer.Option("--keep", help="The change becomes part of the run's game (every game).")
    ] = False,
    drop: Annotated[bool, typer.Option("--drop", help="Take the change out of the run's games.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """End the anneal: --keep the change in every game from now on, or --drop it."""
    from fivectl.anneal.run import stop as stop_anneal

    if keep == drop:
        raise BadInput("say --keep (the change stays, in every game) or --drop (it goes)")
    result = stop_anneal(run, keep=keep)
    if as_json:
        print_json(result)
        return
    if keep:
        text = f"{result['change']} is part of {run}'s game now (was at fraction {result['fraction']:.3f})"
    else:
        text = f"{result['change']} dropped from {run} (was at fraction {result['fraction']:.3f})"
    out_console.print(text + f"; next: fivectl train --run {run} --resume", highlight=False, soft_wrap=True)
