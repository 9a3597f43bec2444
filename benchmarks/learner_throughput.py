"""Learner throughput: samples/s of forward + backward over batches of 16-step windows, on CPU, one thread.

For each model (quickstart recipe; a mid-size 5v5 model with a 1024-unit LSTM) it times ``evaluate`` + a simple
PPO-like loss + ``backward``, in float32 and under bfloat16 autocast (``train.precision``). In the same run over
the same batch shape it times a bare ``torch.nn.LSTM`` of the same input and hidden size (forward + backward of
``out.sum()``): the ratio is the cost of everything around the LSTM (encoder, heads, masks). It also times the ways of resetting the LSTM state at game starts inside a window, and
one forward/backward of the paper-scale network (4096-unit LSTM). ``ppo_iteration_samples_per_s`` is a whole
``PPOLearner.train_iteration`` (GAE, windows, loss, backward, ClippedAdam, metrics) on one learner batch of
synthetic fragments.

On the CPU every figure is the process's CPU time on its one thread (``--clock cpu``, the default there): time
another process takes on a shared machine does not count, so the ratio to the bare LSTM holds on a busy machine
too (``--clock wall`` for elapsed time). The machine (CPU model, cores) is in the output. Like the learner, the
benchmark keeps freed memory in the process (``fivectl.runtime.allocator``).

    .venv/bin/python benchmarks/learner_throughput.py --json
    .venv/bin/python benchmarks/learner_throughput.py --device cuda --no-paper   # on a machine with a GPU
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from fivectl.config import load_recipe
from fivectl.model import PolicyNet, run_lstm
from fivectl.model.synthetic import random_obs
from fivectl.rl.aux import aux_losses
from fivectl.rl.bptt import map_tensors
from fivectl.rl.learner import PPOLearner
from fivectl.rl.schedules import Hyperparameters
from fivectl.runtime.allocator import keep_freed_memory
from fivectl.schema import load_schema

REPO = Path(__file__).resolve().parents[1]
WINDOW = 16


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
clock = time.perf_counter  # set by --clock


def timed(fn, repeats: int) -> float:
    """Median seconds of ``fn()`` after one warm-up call (CUDA work included: the device is synchronised)."""
    fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        times.append(clock() - start)
    return statistics.median(times)


def window_batch(net: PolicyNet, windows: int, seed: int = 0):
    schema = net.schema
    g = torch.Generator().manual_seed(seed)
    obs = random_obs(schema, (WINDOW, windows), g)
    first = torch.zeros(WINDOW, windows, dtype=torch.bool)
    first[0] = True
    with torch.no_grad():
        state = net.initial_state(windows)
        actions = []
        for t in range(WINDOW):
            out = net.act({k: v[t] for k, v in obs.items()}, state, first[t])
            state = out.state
            actions.append(out.actions)
    first[0] = False  # a training window starts from its stored state, not a reset
    return obs, torch.stack(actions), first


def learner_step(net: PolicyNet, obs, actions, first, state0, advantages, returns) -> None:
    net.zero_grad(set_to_none=True)
    ev = net.evaluate(obs, actions, state0, first)
    loss = (
        -(ev.logprob * advantages).mean()
        + 0.5 * (ev.value - returns).square().mean()
        - 0.01 * ev.entropy.mean()
        + torch.nn.functional.binary_cross_entropy_with_logits(
            ev.win_logit, torch.full_like(ev.win_logit, 0.5)
        )
        + sum(v.square().mean() for v in ev.aux.values())
    )
    loss.backward()


def bare_lstm_step(lstm: torch.nn.LSTM, x: torch.Tensor, state) -> None:
    lstm.zero_grad(set_to_none=True)
    out, _ = lstm(x, state)
    out.sum().backward()


def measure_model(
    name: str, recipe: str, overrides: list[str], windows: int, repeats: int, device: torch.device
) -> dict:
    cfg = load_recipe(REPO / "recipes" / recipe, overrides)
    schema = load_schema(cfg.model.schema_version)
    torch.manual_seed(0)
    net = PolicyNet(schema, cfg.model, cfg.game.team_size)
    windows -= windows % cfg.game.team_size
    obs, actions, first = window_batch(net, windows)
    state0 = tuple(s.normal_() * 0.1 for s in net.initial_state(windows))
    adv, ret = torch.randn(WINDOW, windows), torch.randn(WINDOW, windows)
    net.to(device)
    obs, actions, first, state0, adv, ret = map_tensors(
        lambda x: x.to(device), (obs, actions, first, state0, adv, ret)
    )
    ours = timed(lambda: learner_step(net, obs, actions, first, state0, adv, ret), repeats)

    def bfloat16_step() -> None:  # train.precision = "bfloat16"
        with torch.autocast(device.type, dtype=torch.bfloat16):
            learner_step(net, obs, actions, first, state0, adv, ret)

    ours_bf16 = timed(bfloat16_step, repeats)
    lstm = torch.nn.LSTM(cfg.model.fc_size, cfg.model.lstm_size).to(device)
    x = torch.randn(WINDOW, windows, cfg.model.fc_size, device=device)
    bare = timed(lambda: bare_lstm_step(lstm, x, state0), repeats)
    iteration_samples, iteration_s = measure_ppo_iteration(cfg, schema, windows, repeats, device)
    _, iteration_bf16_s = measure_ppo_iteration(cfg, schema, windows, repeats, device, "bfloat16")
    samples = WINDOW * windows
    return {
        "model": name,
        "recipe": recipe,
        "overrides": overrides,
        "parameters": sum(p.numel() for p in net.parameters()),
        "lstm_size": cfg.model.lstm_size,
        "windows": windows,
        "samples_per_batch": samples,
        "seconds_per_batch": ours,
        "samples_per_s": samples / ours,
        "bfloat16_samples_per_s": samples / ours_bf16,
        "bfloat16_speedup": ours / ours_bf16,
        "bare_lstm_samples_per_s": samples / bare,
        "overhead_ratio": ours / bare,
        "ppo_iteration_samples_per_s": iteration_samples / iteration_s,
        "ppo_iteration_bfloat16_samples_per_s": iteration_samples / iteration_bf16_s,
    }


def measure_ppo_iteration(
    cfg, schema, windows: int, repeats: int, device: torch.device, precision: str = "float32"
) -> tuple[int, float]:
    """(samples, median seconds) of one ``PPOLearner.train_iteration`` on ``windows`` 16-step windows of
    synthetic fragments (batch moved to the device inside, as in training), at ``train.precision``."""
    from aux_overhead import fragment_batch  # the benchmarks' synthetic learner batch

    torch.manual_seed(0)
    net = PolicyNet(schema, cfg.model, cfg.game.team_size).to(device)
    team = cfg.game.team_size
    steps = cfg.train.fragment_length
    columns = max(2 * team, windows * WINDOW // steps // (2 * team) * (2 * team))
    batch = fragment_batch(net.cpu(), steps, columns, len(cfg.model.aux_objectives))
    net.to(device)
    train = replace(cfg.train, bptt=WINDOW, epochs=1, minibatches=1, precision=precision)
    learner = PPOLearner(net, train, team_size=team, aux_loss_fn=aux_losses, objective_gamma=0.999)
    hp = Hyperparameters(learning_rate=1e-4, entropy_coef=0.01, team_spirit=0.0, horizon_s=10.0, gamma=0.99)
    return steps * columns, timed(lambda: learner.train_iteration(batch, hp), repeats)


def stepwise_lstm(lstm: torch.nn.LSTM, x: torch.Tensor, state, first: torch.Tensor):
    """The alternative to ``run_lstm``: one fused call per step, state multiplied by (1 - first)."""
    h, c = state
    outs = []
    for t in range(x.shape[0]):
        keep = (~first[t]).to(x.dtype)[None, :, None]
        out, (h, c) = lstm(x[t : t + 1], (h * keep, c * keep))
        outs.append(out)
    return torch.cat(outs), (h, c)


def measure_resets(lstm_size: int, fc_size: int, windows: int, repeats: int) -> dict:
    """Forward + backward of the LSTM alone under each reset strategy, for 0, 1 and 15 inner reset steps."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(fc_size, lstm_size)
    x = torch.randn(WINDOW, windows, fc_size)
    state = (torch.zeros(1, windows, lstm_size), torch.zeros(1, windows, lstm_size))
    out: dict[str, float] = {}
    for resets in (0, 1, WINDOW - 1):
        first = torch.zeros(WINDOW, windows, dtype=torch.bool)
        for t in range(1, resets + 1):
            first[t, t % windows] = True
        for label, fn in (("split_at_resets", run_lstm), ("stepwise", stepwise_lstm)):

            def step(fn=fn, first=first):
                lstm.zero_grad(set_to_none=True)
                y, _ = fn(lstm, x, state, first)
                y.sum().backward()

            out[f"{label}_{resets}_resets_samples_per_s"] = WINDOW * windows / timed(step, repeats)
    return {"lstm_size": lstm_size, "windows": windows, **out}


def measure_paper_scale() -> dict:
    cfg = load_recipe(REPO / "recipes" / "paper-scale.toml")
    schema = load_schema(cfg.model.schema_version)
    start = time.perf_counter()
    torch.manual_seed(0)
    net = PolicyNet(schema, cfg.model, cfg.game.team_size)
    build_s = time.perf_counter() - start
    windows = cfg.game.team_size
    obs, actions, first = window_batch(net, windows)
    state0 = net.initial_state(windows)
    adv, ret = torch.randn(WINDOW, windows), torch.randn(WINDOW, windows)
    start = time.perf_counter()
    learner_step(net, obs, actions, first, state0, adv, ret)
    step_s = time.perf_counter() - start
    finite = all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)
    return {
        "parameters": sum(p.numel() for p in net.parameters()),
        "build_seconds": build_s,
        "samples": WINDOW * windows,
        "forward_backward_seconds": step_s,
        "gradients_finite": bool(finite),
    }


def main() -> None:
    from _machine import cpu_model  # benchmarks/ is on the path when run as a script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--windows", type=int, default=120, help="16-step windows per batch (rounded to teams)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions per measurement (median)")
    parser.add_argument("--no-paper", action="store_true", help="skip the paper-scale forward/backward")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the learner runs")
    parser.add_argument(
        "--clock", choices=tuple(CLOCKS), help="cpu: this thread's CPU time (default on the CPU); wall: elapsed"
    )
    args = parser.parse_args()
    global clock
    clock_name = args.clock or ("cpu" if args.device == "cpu" else "wall")
    clock = CLOCKS[clock_name]
    keep_freed_memory()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA device on this machine", file=sys.stderr)
        raise SystemExit(2)
    device = torch.device(args.device)
    torch.set_num_threads(1)
    models = [
        measure_model("quickstart", "quickstart.toml", [], args.windows, args.repeats, device),
        measure_model("mid", "five-v-five.toml", ["model.lstm_size=1024"], args.windows, args.repeats, device),
    ]
    result = {
        "torch": torch.__version__,
        "machine": cpu_model(),
        "clock": clock_name,
        "device": str(device),
        "threads": torch.get_num_threads(),
        "window": WINDOW,
        "models": models,
    }
    if device.type == "cpu":  # the reset strategies and the paper-scale pass are CPU measurements
        result["lstm_resets"] = measure_resets(1024, 512, args.windows, args.repeats)
    if not args.no_paper and device.type == "cpu":
        result["paper_scale"] = measure_paper_scale()
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    print(f"{result['machine']}, torch {result['torch']}, {clock_name} time")
    for m in models:
        print(
            f"{m['model']:>10}: {m['parameters']:>11,} params, {m['samples_per_s']:>9.0f} samples/s "
            f"(bare LSTM {m['bare_lstm_samples_per_s']:.0f}/s, ratio {m['overhead_ratio']:.2f}x); "
            f"bfloat16 {m['bfloat16_samples_per_s']:.0f}/s ({m['bfloat16_speedup']:.2f}x); "
            f"whole PPO iteration {m['ppo_iteration_samples_per_s']:.0f}/s "
            f"(bfloat16 {m['ppo_iteration_bfloat16_samples_per_s']:.0f}/s)"
        )
    for k, v in result.get("lstm_resets", {}).items():
        if k.endswith("samples_per_s"):
            print(f"  lstm 1024 {k}: {v:.0f}")
    if "paper_scale" in result:
        p = result["paper_scale"]
        print(
            f"paper-scale: {p['parameters']:,} params, one forward/backward of {p['samples']} samples "
            f"in {p['forward_backward_seconds']:.1f} s"
        )


if __name__ == "__main__":
    main()
