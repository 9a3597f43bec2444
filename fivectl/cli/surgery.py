"""``fivectl surgery``: add observations, widen layers, retire inputs, add actions or heroes to a trained run;
verify the result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fivectl.cli.common import EXIT_FAILED, err_console, handle_errors, out_console, print_json
from fivectl.errors import BadInput
from fivectl.surgery.add_action import plan_add_action, plan_add_hero
from fivectl.surgery.add_obs import plan_add_obs
from fivectl.surgery.calibrate import calibrate_columns
from fivectl.surgery.retire import default_constant, plan_retire
from fivectl.surgery.run import Parent, SurgeryResult, operate
from fivectl.surgery.schemas import resolve_schema
from fivectl.surgery.verify import FRESH_GAMES, FRESH_STEPS
from fivectl.surgery.verify import verify as verify_run
from fivectl.surgery.widen import plan_widen

app = typer.Typer(
    help="Change a trained run's observations and network without losing what it learned (paper B). Each "
    "operation reads RUN (or RUN@VERSION) and writes a new run --out; the parent is never modified.",
    no_args_is_help=True,
)

RunArg = Annotated[str, typer.Argument(help="The run to operate on: RUN (its latest checkpoint) or RUN@VERSION.")]
OutOpt = Annotated[Path, typer.Option("--out", help="The new run directory (must not exist).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the new units' random incoming weights.")]


@app.callback()
def surgery() -> None:
    """Change a trained run's observations and network without losing what it learned."""


def report(result: SurgeryResult, as_json: bool) -> None:
    if as_json:
        print_json(result.to_json())
        return
    plan = result.plan
    out_console.print(f"{plan.operation}: {result.parent}@{result.version} -> {result.out}", highlight=False)
    rows = [("tensor", "before", "", "after", "what changed")]
    for row in result.changed:
        before = "new" if row["before"] is None else "x".join(map(str, row["before"])) or "scalar"
        rows.append((row["name"], before, "->", "x".join(map(str, row["after"])) or "scalar", row["note"]))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for i, r in enumerate(rows):  # plain aligned text: long tensor names never wrap
        line = f"  {r[0]:<{widths[0]}}  {r[1]:>{widths[1]}} {r[2]:^2} {r[3]:<{widths[3]}}  {r[4]}".rstrip()
        out_console.print(line, style="bold" if i == 0 else None, highlight=False, soft_wrap=True)
    before, after = plan.schema_before.version, plan.schema_after.version
    schema = f"schema v{before} -> v{after}" if before != after else f"schema v{after}"
    if plan.operation == "retire":
        schema += f" with {plan.args['field']} fed {plan.args['constant']:g}"
    out_console.print(
        f"{schema}, parameters "
        f"{result.parameters_before:,} -> {result.parameters_after:,}; {len(result.versions)} checkpoint(s) "
        f"converted (the opponent pool with them) in {result.seconds:.1f} s",
        highlight=False,
        soft_wrap=True,
    )
    out_console.print(
        f"next: fivectl surgery verify {result.out}; fivectl train --run {result.out} --resume",
        highlight=False,
        soft_wrap=True,
    )


def progress(as_json: bool):
    if as_json:
        return None
    return lambda v: err_console.print(f"converted v{v}", style="dim", highlight=False)


@app.command("add-obs")
@handle_errors
def add_obs(
    run: RunArg,
    schema: Annotated[str, typer.Option("--schema", help="Schema version N (schemas/obs/vN.toml) or a file.")],
    out: OutOpt,
    calibrate_games: Annotated[
        int, typer.Option("--calibrate-games", min=0, help="Bot games that calibrate new columns (0: none).")
    ] = 8,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """Carry the model to a superset observation schema: new input columns start at zero (W' = [W 0])."""
    new = resolve_schema(schema)

    def build(parent: Parent):
        label = f"v{new.version}" if schema.strip().lstrip("vV").isdigit() else schema
        plan = plan_add_obs(
            parent.schema, new, parent.model, parent.team_size, new_label=label,
            obs_clip=parent.recipe.train.obs_clip, seed=seed,
        )  # fmt: skip
        if calibrate_games:
            stats = calibrate_columns(new, parent.recipe.game, games=calibrate_games, seed=seed)
            plan = plan_add_obs(
                parent.schema, new, parent.model, parent.team_size, new_label=label, calibration=stats,
                obs_clip=parent.recipe.train.obs_clip, seed=seed,
            )  # fmt: skip
        plan.args["calibrate_games"] = calibrate_games
        return plan

    report(operate(run, out, build, progress(as_json)), as_json)


@app.command("widen")
@handle_errors
def widen(
    run: RunArg,
    out: OutOpt,
    fc: Annotated[int | None, typer.Option("--fc", help="New width of the FC layer before the LSTM.")] = None,
    lstm: Annotated[int | None, typer.Option("--lstm", help="New LSTM size.")] = None,
    unit_hidden: Annotated[
        int | None, typer.Option("--unit-hidden", help="New hidden width of the unit-set MLPs.")
    ] = None,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """Wider layers whose new units have zero outgoing weights: the same function, exactly."""

    def build(parent: Parent):
        return plan_widen(
            parent.schema, parent.model, parent.team_size, fc=fc, lstm=lstm, unit_hidden=unit_hidden,
            obs_clip=parent.recipe.train.obs_clip, seed=seed,
        )  # fmt: skip

    report(operate(run, out, build, progress(as_json)), as_json)


@app.command("retire")
@handle_errors
def retire(
    run: RunArg,
    field: Annotated[str, typer.Option("--field", help="The field to retire, GROUP.NAME (e.g. self.buyback_cost).")],
    out: OutOpt,
    constant: Annotated[
        float | None,
        typer.Option("--constant", help="The value fed from now on (default: its running mean; 0 if categorical)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Feed a field as a constant from now on; its contribution at that constant is folded into the bias."""

    def build(parent: Parent):
        value = default_constant(parent.schema, field, parent.state) if constant is None else constant
        return plan_retire(
            parent.schema, parent.model, parent.team_size, field, value, obs_clip=parent.recipe.train.obs_clip
        )

    report(operate(run, out, build, progress(as_json)), as_json)


@app.command("add-action")
@handle_errors
def add_action(
    run: RunArg,
    action: Annotated[str, typer.Option("--action", help="The game's primary action to add (e.g. item4).")],
    out: OutOpt,
    bias: Annotated[
        float, typer.Option("--bias", help="Bias of the new logit (its weights start at zero).")
    ] = 0.0,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """A new primary action with zero probability wherever the game masks it: the same function on old games."""

    def build(parent: Parent):
        return plan_add_action(
            parent.schema, parent.model, parent.team_size, action, bias=bias,
            obs_clip=parent.recipe.train.obs_clip, seed=seed,
        )  # fmt: skip

    report(operate(run, out, build, progress(as_json)), as_json)


@app.command("add-hero")
@handle_errors
def add_hero(
    run: RunArg,
    out: OutOpt,
    vocab: Annotated[int, typer.Option("--vocab", help="New size of every hero-id vocabulary (heroes + 1).")],
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """Larger hero-id vocabularies (new embedding rows, unused by old games): the same function, exactly."""

    def build(parent: Parent):
        return plan_add_hero(
            parent.schema, parent.model, parent.team_size, vocab, obs_clip=parent.recipe.train.obs_clip, seed=seed
        )

    report(operate(run, out, build, progress(as_json)), as_json)


@app.command("verify")
@handle_errors
def verify(
    run: Annotated[str, typer.Argument(help="The operated run (RUN2, or RUN2@VERSION).")],
    against: Annotated[
        str | None, typer.Option("--against", help="Compare with RUN@VERSION instead of the recorded parent.")
    ] = None,
    fragments: Annotated[int, typer.Option("--fragments", help="Rollout fragments to replay.")] = 8,
    games: Annotated[
        int, typer.Option("--games", help="Fresh games the parent plays when it kept no rollouts to replay.")
    ] = FRESH_GAMES,
    steps: Annotated[int, typer.Option("--steps", help="Decisions compared in those fresh games.")] = FRESH_STEPS,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random values of new inputs and fresh games.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Replay the parent's rollouts (or, when it kept none, fresh games the parent plays) through both networks;
    add-obs, widen, add-action and add-hero must agree within 1e-5 (else exit 1)."""
    for name, value in (("--fragments", fragments), ("--games", games), ("--steps", steps)):
        if value < 1:
            raise BadInput(f"{name}: must be >= 1, got {value}")
    result = verify_run(run, against, fragments, seed, games=games, steps=steps)
    if as_json:
        print_json(result)
    else:
        show_verify(result)
    if not result["ok"]:
        raise typer.Exit(EXIT_FAILED)


def show_verify(result: dict) -> None:
    def say(text: str) -> None:
        out_console.print(text, highlight=False, soft_wrap=True)

    say(f"{result['parent']}@{result['parent_version']} vs {result['child']}@{result['child_version']}")
    fresh = result["fresh_games"]
    if fresh is not None:
        say(
            f"no recorded rollouts in {result['parent']} (or its ancestors) that its schema reads: played "
            f"{fresh['games']} fresh games with the parent (v{result['parent_version']}) for "
            f"{result['samples']:,} observations"
        )
    for key, value in result["max_abs_delta"].items():
        say(f"  max |delta| {key:<8} {value:.3g}")
    bound = result["tolerance"]
    verdict = (
        f"within {bound:g}" if result["ok"] and bound else "exceeds " + f"{bound:g}" if bound else "drift (retire)"
    )
    say(
        f"{result['fragments']} fragments, {result['samples']:,} samples; {result['operation'] or 'compare'}: "
        f"{verdict}"
    )
