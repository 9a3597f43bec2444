"""GPU check: acting on the GPU against acting in the CPU workers, and the paper-scale learner on the GPU.

    python benchmarks/gpu.py                          # about 7 minutes on a machine with one GPU
    python benchmarks/gpu.py --out gpu.json           # the table, and the JSON summary in gpu.json
    python benchmarks/gpu.py --allow-cpu --minutes 0.4 --budget-minutes 7   # the same parts on the CPU

It prints the GPU's name, torch and CUDA versions and the CPU, then measures:

- end-to-end training samples/s (``fivectl train``, learner on the GPU) of the quickstart and five-v-five-quick
  recipes, once with ``train.acting=worker`` (each rollout worker runs the policy on its CPU core) and once with
  ``train.acting=server`` (the workers' observations are batched and the policy runs on the GPU), and the
  ratio server / worker. Samples/s are read from the run's own metrics, after the first 20% of its iterations
  (start-up), as ``train_throughput.py`` reads them. A version of fivectl without ``train.acting`` reports the
  server runs as unavailable and trains the worker runs as it always acts (in the workers);
- the paper-scale learner: one ``PPOLearner.train_iteration`` (GAE, windows, loss, backward, optimizer) over the
  paper-scale recipe's learner batch of synthetic fragments, float32 and bfloat16, as ``learner_throughput.py``
  times it: milliseconds per iteration and samples/s.

The whole check keeps to ``--budget-minutes``: the training runs share what the warm-up (numba compiles the
game's kernels on first use, unless its cache has them) and the learner part leave, each at most ``--minutes``
of training, and a run that no longer fits is reported as skipped. ``--out`` is rewritten after every part,
so a check stopped early leaves what it measured. Without CUDA it exits 2, unless ``--allow-cpu``: then the
learner runs on the CPU, on a shrunk paper-scale network and a few short fragments (a test of the script, not
a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc
import torch

from fivectl.config import load_recipe
from fivectl.errors import BadInput
from fivectl.model import PolicyNet
from fivectl.runtime.allocator import keep_freed_memory
from fivectl.schema import load_schema
from fivectl.store.metrics import MetricsLog

sys.path.insert(0, str(Path(__file__).resolve().parent))
import learner_throughput  # noqa: E402
from _machine import cpu_model  # noqa: E402
from _train import train_for  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RECIPES = ("quickstart", "five-v-five-quick")
ACTING = ("worker", "server")
# Seconds a training run's process takes beyond its --max-minutes (imports, workers starting, the first
# fragments, the last checkpoint), until the first run has measured it.
RUN_OVERHEAD_S = 25.0
SHORTEST_RUN_MIN = 0.25


class Clock:
    """Elapsed time of the check against its budget; progress lines on stderr carry the elapsed time."""

    def __init__(self, budget_minutes: float):
        self.start = time.perf_counter()
        self.budget_s = budget_minutes * 60.0

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def say(self, text: str) -> None:
        m, s = divmod(int(self.elapsed()), 60)
        print(f"[{m}:{s:02d}] {text}", file=sys.stderr, flush=True)


def machine(device: torch.device) -> dict:
    info = {
        "torch": torch.__version__,
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "device": device.type,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info |= {
            "gpu": torch.cuda.get_device_name(device),
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "compute_capability": f"{props.major}.{props.minor}",
            "cuda": torch.version.cuda,
            "driver": driver_version(),
        }
    return info


def driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def warm_up(recipes: tuple[str, ...]) -> float:
    """Compile (or load from numba's cache) the game's and the encoder's kernels in this process, so that the
    training runs load them instead of compiling inside their measured time; returns the seconds it took."""
    from fivectl.runtime.worker import warm_up_game

    start = time.perf_counter()
    for name in recipes:
        cfg = load_recipe(REPO / "recipes" / f"{name}.toml")
        schema = load_schema(cfg.model.schema_version)
        warm_up_game(cfg, schema)
        net = PolicyNet(schema, cfg.model, cfg.game.team_size)
        learner_throughput.window_batch(net, 2 * cfg.game.team_size)  # a few act steps on the CPU
    return time.perf_counter() - start


# ---- the learner at paper scale ---------------------------------------------------------------------------


PRECISIONS = ("float32", "bfloat16")
# With --allow-cpu the paper-scale network is shrunk and its fragments short: at full size one bfloat16 iteration
# of 160 samples took 5 minutes on a 2-core CPU without AMX. On the CPU this tests the code path, nothing more.
CPU_PAPER_OVERRIDES = ["train.fragment_length=16", "model.lstm_size=256", "model.fc_size=256"]


def paper_scale(
    device: torch.device, windows: int | None, repeats: int, overrides: list[str], timeout_s: float
) -> dict:
    """The paper-scale learner's iteration, measured in a child process (``--paper-only``) stopped after
    ``timeout_s``: a slow iteration cannot take the training runs' time, and the device memory it held is
    released before they start. What the child measured before a stop is kept."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--paper-only", "--repeats", str(repeats)]
    cmd += (["--paper-windows", str(windows)] if windows else []) + [
        x for o in overrides for x in ("--paper-set", o)
    ]
    if device.type == "cpu":
        cmd.append("--allow-cpu")
    result: dict = {"overrides": overrides, "repeats": repeats}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            code = subprocess.run(cmd, stdout=out, stderr=err, timeout=timeout_s).returncode
            problem = f"exit code {code}" if code else ""
        except subprocess.TimeoutExpired:
            problem = f"stopped after {timeout_s:.0f} s"
        out.seek(0)
        err.seek(0)
        for line in out:
            if line.startswith("{"):
                result |= json.loads(line)
        last_err = (err.read().strip().splitlines() or [""])[-1]
    for precision in PRECISIONS:
        if precision not in result:
            result[precision] = {"error": f"{problem}: {last_err}" if last_err else problem or "no result"}
    return result


def paper_child(device: torch.device, windows: int | None, repeats: int, overrides: list[str]) -> None:
    """``--paper-only``: one JSON line as each part is measured (the parent keeps the lines it got)."""
    cfg = load_recipe(REPO / "recipes" / "paper-scale.toml", overrides)
    schema = load_schema(cfg.model.schema_version)
    windows = windows or cfg.train.batch_windows * cfg.train.minibatches
    with torch.device("meta"):  # the count without allocating 160M parameters once more
        net = PolicyNet(schema, cfg.model, cfg.game.team_size)
    head = {
        "parameters": sum(p.numel() for p in net.parameters()),
        "fragment_length": cfg.train.fragment_length,
    }
    print(json.dumps(head), flush=True)
    for precision in PRECISIONS:
        print(
            json.dumps({precision: one_precision(cfg, schema, windows, repeats, device, precision)}),
            flush=True,
        )


def one_precision(cfg, schema, windows: int, repeats: int, device: torch.device, precision: str) -> dict:
    for _ in range(3):
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        try:
            samples, seconds = learner_throughput.measure_ppo_iteration(
                cfg, schema, windows, repeats, device, precision
            )
        except torch.cuda.OutOfMemoryError:
            windows //= 2
            continue
        out = {
            "windows": samples // learner_throughput.WINDOW,  # the fragments hold whole teams: a few less
            "samples": samples,
            "ms_per_iteration": seconds * 1e3,
            "samples_per_s": samples / seconds,
        }
        if device.type == "cuda":
            out["peak_memory_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        return out
    return {"error": f"out of device memory down to {windows * 2} windows"}


# ---- end-to-end training: acting in the workers or on the GPU ----------------------------------------------


def acting_override(recipe: Path, acting: str) -> tuple[list[str], str | None]:
    """The ``--set`` arguments that select ``acting``, or why this version of fivectl cannot."""
    try:
        load_recipe(recipe, [f"train.acting={acting}"])
    except BadInput as e:
        if acting == "worker":  # a version before train.acting: its workers act, the only way it has
            return [], None
        return [], str(e).splitlines()[0].removeprefix(f"{recipe}: ")
    return ["--set", f"train.acting={acting}"], None


def steady_rate(run_dir: Path) -> dict:
    """Samples/s after the first 20% of iterations (start-up), as ``train_throughput.py`` reads it, and the
    share of that time the learner spent learning and waiting for fragments."""
    table = MetricsLog(run_dir / "metrics").read()
    n = table.num_rows
    steady = table.slice(n // 5) if n >= 5 else table
    samples, wall = steady.column("samples"), steady.column("wall_seconds")
    span = wall[-1].as_py() - wall[0].as_py()
    out: dict = {
        "steady": True,
        "iterations": n,
        "samples_per_s": (samples[-1].as_py() - samples[0].as_py()) / span if span > 0 else None,
    }
    after_first = steady.slice(1)  # the first row's times were spent before the span starts
    for name in ("seconds_learn", "seconds_wait"):
        if name in steady.column_names and span > 0:
            out[name.replace("seconds_", "learner_") + "_fraction"] = (
                float(pc.sum(after_first.column(name)).as_py() or 0) / span
            )
    if "staleness_mean" in steady.column_names:
        out["staleness_mean"] = float(pc.mean(steady.column("staleness_mean")).as_py())
    return out


def train_once(
    recipe: Path,
    acting: str,
    acting_args: list[str],
    minutes: float,
    workers: int,
    device: str,
    extra: list[str],
    tmp: Path,
    timeout: float,
) -> dict:
    run_dir = tmp / f"{recipe.stem}-{acting}"
    args = ["--workers", str(workers), "--device", device, *acting_args, *extra]
    start = time.perf_counter()
    try:
        summary = train_for(recipe, run_dir, minutes, *args, timeout=timeout)
    except SystemExit as e:  # train_for's message ends with the run's stderr
        return {"acting": acting, "failed": str(e).strip().splitlines()[-1]}
    run = {
        "acting": acting if acting_args else "worker (this version has no train.acting)",
        "minutes": minutes,
        "process_seconds": time.perf_counter() - start,
        "samples": summary["samples"],
        "samples_per_s_overall": summary["samples"] / max(summary["wall_seconds"], 1e-9),
        **steady_rate(run_dir),
    }
    if run["samples_per_s"] is None:  # too few iterations for a steady state (a test on a slow CPU)
        run["samples_per_s"] = run["samples_per_s_overall"]
        run["steady"] = False
    return run


def training(args: argparse.Namespace, device: str, clock: Clock, report) -> dict:
    runs = [(name, acting) for name in args.recipes for acting in ACTING]
    results: dict = {"workers": args.workers, "learner_device": device, "recipes": {}}
    overhead = RUN_OVERHEAD_S
    with tempfile.TemporaryDirectory(prefix="fivectl-gpu-") as tmp:
        for i, (name, acting) in enumerate(runs):
            recipe = REPO / "recipes" / f"{name}.toml"
            entry = results["recipes"].setdefault(name, {})
            acting_args, unavailable = acting_override(recipe, acting)
            share = clock.left() / (len(runs) - i)  # what is left, shared among the runs still to come
            minutes = min(args.minutes, (share - overhead) / 60.0)
            if unavailable or minutes < SHORTEST_RUN_MIN:
                why = {"unavailable": unavailable} if unavailable else {"skipped": "out of the time budget"}
                entry[acting] = {"acting": acting, **why}
                clock.say(f"{name}, acting={acting}: {describe(entry[acting])}")
                continue
            clock.say(f"{name}, acting={acting}: training {minutes:.2f} min ...")
            run = train_once(
                recipe,
                acting,
                acting_args,
                round(minutes, 2),
                args.workers,
                device,
                args.extra,
                Path(tmp),
                timeout=60.0 * minutes
                + 120.0
                + 2 * overhead,  # a run that hangs leaves the others their time
            )
            entry[acting] = run
            if "process_seconds" in run:
                overhead = max(overhead, run["process_seconds"] - 60.0 * run["minutes"])
            clock.say(f"{name}, acting={acting}: {describe(run)}")
            if all(a in entry for a in ACTING):
                w, s = (entry[a].get("samples_per_s") for a in ACTING)
                entry["server_over_worker"] = s / w if w and s else None
            report()
    return results


def describe(run: dict) -> str:
    for key in ("unavailable", "failed", "skipped"):
        if key in run:
            return f"{key}: {run[key]}"
    rate = run.get("samples_per_s")
    return f"{rate:,.0f} samples/s" if rate else f"no steady rate ({run.get('iterations')} iterations)"


# ---- the report -------------------------------------------------------------------------------------------


def table(result: dict) -> str:
    m = result["machine"]
    lines = []
    if "gpu" in m:
        lines.append(
            f"GPU: {m['gpu']} ({m['gpu_memory_gib']} GiB, compute {m['compute_capability']}, driver "
            f"{m['driver']}), torch {m['torch']} (CUDA {m['cuda']})"
        )
    else:
        lines.append(f"no GPU (--allow-cpu): everything on the CPU, torch {m['torch']}")
    lines.append(f"CPU: {m['cpu']}")
    if "warm_up_seconds" in result:
        lines.append(f"warm-up (numba kernels compiled or loaded): {result['warm_up_seconds']:.0f} s")
    p = result.get("paper_scale")
    if p:
        shrunk = f", shrunk on the CPU: {' '.join(p['overrides'])}" if p.get("overrides") else ""
        lines.append(
            f"paper-scale learner iteration ({p.get('parameters', 0) / 1e6:.1f}M parameters{shrunk}):"
        )
        for precision in ("float32", "bfloat16"):
            r = p.get(precision, {})
            if "error" in r:
                lines.append(f"  {precision:<9} {r['error']}")
            elif r:
                memory = f", peak {r['peak_memory_gib']} GiB" if "peak_memory_gib" in r else ""
                lines.append(
                    f"  {precision:<9} {r['ms_per_iteration']:>9,.1f} ms per iteration of {r['samples']:,} samples"
                    f" ({r['windows']} windows): {r['samples_per_s']:>10,.0f} samples/s{memory}"
                )
    t = result.get("training")
    if t:
        lines.append(f"training samples/s ({t['workers']} workers, learner on {t['learner_device']}):")
        lines.append(f"  {'recipe':<20}{'acting=worker':>16}{'acting=server':>16}{'server/worker':>15}")
        for name, entry in t["recipes"].items():
            cells = [cell(entry.get(a, {})) for a in ACTING]
            ratio = entry.get("server_over_worker")
            lines.append(f"  {name:<20}{cells[0]:>16}{cells[1]:>16}{f'{ratio:.2f}x' if ratio else '-':>15}")
            notes = [
                f"{a}: {describe(entry[a])}"
                for a in ACTING
                if a in entry and not entry[a].get("samples_per_s")
            ]
            lines.extend(f"    {n}" for n in notes)
    lines.append(f"elapsed: {result['elapsed_seconds'] / 60:.1f} min")
    return "\n".join(lines)


def paper_cell(r: dict) -> str:
    return r["error"] if "error" in r else f"{r['ms_per_iteration']:,.1f} ms per iteration"


def cell(run: dict) -> str:
    rate = run.get("samples_per_s")
    if rate:
        return f"{rate:,.0f}"
    return next((k for k in ("unavailable", "failed", "skipped") if k in run), "-")


def write_json(path: Path, result: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, path)  # a reader never sees half a file


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    cores = os.cpu_count() or 2
    parser.add_argument("--minutes", type=float, default=1.0, help="training minutes per run, at most")
    parser.add_argument(
        "--budget-minutes", type=float, default=7.5, help="the whole check's wall-clock budget"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=max(1, min(8, cores // 2)),
        help="rollout workers (default: half the cores, at most 8)",
    )
    parser.add_argument(
        "--recipes", nargs="+", default=list(RECIPES), help="recipes trained worker and server"
    )
    parser.add_argument(
        "--paper-windows", type=int, help="16-step windows of the paper-scale batch (default: the recipe's)"
    )
    parser.add_argument(
        "--repeats", type=int, help="timed paper-scale iterations (median; default 3 on a GPU)"
    )
    parser.add_argument(
        "--paper-seconds", type=float, default=120.0, help="stop the paper-scale part after this many seconds"
    )
    parser.add_argument("--no-paper", action="store_true", help="skip the paper-scale learner")
    parser.add_argument(
        "--warm-up-only", action="store_true", help="compile numba's kernels into its cache, then exit"
    )
    parser.add_argument("--paper-only", action="store_true", help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--paper-set", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--no-training", action="store_true", help="skip the training runs")
    parser.add_argument(
        "--set", action="append", default=[], dest="overrides", help="recipe override for every run"
    )
    parser.add_argument(
        "--allow-cpu", action="store_true", help="without CUDA, run on the CPU with tiny batches"
    )
    parser.add_argument("--json", action="store_true", help="print the JSON summary instead of the table")
    parser.add_argument("--out", type=Path, help="write the JSON summary here (after every part)")
    args = parser.parse_args()
    args.extra = [x for o in args.overrides for x in ("--set", o)]
    if args.warm_up_only:  # the CPU's work: no device needed
        print(f"warm-up (numba kernels): {warm_up(tuple(args.recipes)):.0f} s")
        return
    if not torch.cuda.is_available() and not args.allow_cpu:
        print(
            "needs a CUDA device (torch sees none; --allow-cpu runs the same parts on the CPU)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    keep_freed_memory()  # as the learner does
    on_gpu = device.type == "cuda"
    repeats = args.repeats or (3 if on_gpu else 1)
    if args.paper_only:
        paper_child(device, args.paper_windows, repeats, args.paper_set)
        return
    clock = Clock(args.budget_minutes)
    result: dict = {"machine": machine(device), "budget_minutes": args.budget_minutes}

    def report() -> None:
        result["elapsed_seconds"] = clock.elapsed()
        if args.out:
            write_json(args.out, result)

    clock.say(f"{result['machine'].get('gpu', 'no GPU')}; {result['machine']['cpu']}")
    report()
    if not args.no_training:
        result["warm_up_seconds"] = warm_up(tuple(args.recipes))
        clock.say(f"warm-up (numba kernels): {result['warm_up_seconds']:.0f} s")
        report()
    if not args.no_paper:
        clock.say("paper-scale learner iteration ...")
        result["paper_scale"] = paper_scale(
            device,
            args.paper_windows or (None if on_gpu else 10),
            repeats,
            [] if on_gpu else CPU_PAPER_OVERRIDES,
            min(args.paper_seconds, max(clock.left(), 10.0)),
        )
        clock.say(
            "paper-scale: " + ", ".join(f"{p} {paper_cell(result['paper_scale'][p])}" for p in PRECISIONS)
        )
        report()
    if not args.no_training:
        result["training"] = training(args, device.type, clock, report)
    report()
    if args.json and not args.out:
        print(json.dumps(result, indent=2))
    else:
        print(table(result))


if __name__ == "__main__":
    main()
