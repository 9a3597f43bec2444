"""``fivectl train``: start or resume a run of actor-learner PPO self-play."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Annotated

import typer

from fivectl.cli.common import err_console, handle_errors, print_json
from fivectl.config.recipes import resolve_recipe
from fivectl.errors import BadInput


@handle_errors
def train(
    recipe: Annotated[
        Path | None,
        typer.Argument(
            help="A TOML recipe, or a shipped recipe's name (fivectl recipe list); optional with --resume: "
            "the run's own."
        ),
    ] = None,
    run: Annotated[
        Path | None, typer.Option("--run", help="Run directory (default runs/NAME-TIMESTAMP).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run from its last published checkpoint.")
    ] = False,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Rollout worker processes; 0 = serial mode.")
    ] = None,
    device: Annotated[str | None, typer.Option("--device", help="auto, cpu or cuda (learner).")] = None,
    learners: Annotated[
        int | None,
        typer.Option(
            "--learners",
            help="Data-parallel learners (torch.distributed): one per GPU or core. Under torchrun: WORLD_SIZE.",
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend", help="Rollout workers: local processes, or ray actors (fivectl\\[ray] extra)."
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address", help="Ray cluster head host:port for --backend ray (default: start one)."
        ),
    ] = None,
    max_minutes: Annotated[
        float | None, typer.Option("--max-minutes", help="Stop after M wall-clock minutes.")
    ] = None,
    max_samples: Annotated[
        int | None, typer.Option("--max-samples", help="Stop after N agent-steps trained on.")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a recipe key: --set train.bptt=16.")
    ] = None,
    init_from: Annotated[
        str | None,
        typer.Option(
            "--init-from",
            help="Start a new run's network from RUN or RUN@VERSION (same schema and \\[model]; e.g. "
            "1v1 -> 5v5).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary at the end.")] = False,
) -> None:
    """Start (or --resume) a run: rollout workers + PPO learner, checkpoints, rollouts and metrics in the run dir.

    A recipe with a [curriculum] first stage trains that stage in RUN/first_stage first, then the run from it.
    """
    from fivectl.anneal.controller import AnnealController
    from fivectl.evaluate.periodic import PeriodicEvaluator
    from fivectl.runtime.curriculum import train_in_stages
    from fivectl.runtime.distributed import follow_rank_zero, launch_env
    from fivectl.runtime.learner_loop import train_run
    from fivectl.runtime.run_setup import TrainOptions

    # Under torchrun every rank runs this command: rank 0 trains, the others are its learners and take
    # everything else (recipe, run, checkpoint) from it, so they read none of their own arguments.
    launch = launch_env()
    if launch is not None:
        if learners is not None and learners != launch.world:
            raise BadInput(
                f"--learners {learners}: torchrun started WORLD_SIZE={launch.world} learners (leave --learners out)"
            )
        if launch.rank > 0:
            follow_rank_zero(launch)
            err_console.print(
                f"[fivectl] learner rank {launch.rank} of {launch.world}: stopped with rank 0",
                highlight=False,
                markup=False,
            )
            return
        learners = launch.world
    if recipe is not None:
        recipe = resolve_recipe(recipe)  # a shipped recipe's name -> its file, recorded as the run's source
    overrides = list(set_ or [])
    for key, value in (
        ("workers", workers),
        ("device", device),
        ("learners", learners),
        ("backend", backend),
        ("ray_address", ray_address),
        ("max_minutes", max_minutes),
        ("max_samples", max_samples),
    ):
        if value is not None:
            overrides.append(f"train.{key}={value!r}" if isinstance(value, str) else f"train.{key}={value}")
    if device is not None and device not in ("auto", "cpu", "cuda"):
        raise BadInput(f"--device: must be auto, cpu or cuda, got {device!r}")
    if backend is not None and backend not in ("local", "ray"):
        raise BadInput(f"--backend: must be local or ray, got {backend!r}")
    if ray_address is not None and (backend or "ray") != "ray":
        raise BadInput("--ray-address: only with --backend ray")
    if run is None:
        if resume:
            raise BadInput("--resume needs --run DIR (the run to continue)")
        if recipe is None:
            raise BadInput("give a RECIPE to start a run, e.g. fivectl train quickstart")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        run = Path("runs") / f"{recipe.stem}-{stamp}"
    if not resume and recipe is None:
        raise BadInput("give a RECIPE to start a run (or --resume --run DIR to continue one)")
    opts = TrainOptions(
        run_dir=run,
        recipe_path=recipe,
        resume=resume,
        overrides=overrides,
        evaluation=PeriodicEvaluator.for_run,
        game_change=AnnealController.for_run,
        init_from=init_from,
        launch=launch,
    )
    summary = train_in_stages(opts, train_run)
    if as_json:
        print_json(summary)
    else:
        stage = " in its first stage (--resume continues it)" if summary.get("stage") == "first" else ""
        err_console.print(
            f"[fivectl] stopped ({summary['stop_reason']}){stage}: version {summary['version']}, "
            f"{summary['samples']:,} samples, checkpoint v{summary['checkpoint']} in {summary['run']}",
            highlight=False,
            markup=False,
        )
