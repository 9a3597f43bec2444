"""Throughput of the embedded MOBA: random valid actions, observations encoded every step (schema v1 unless
``--schema N``).

    python benchmarks/sim_throughput.py --seconds 10 --json
    python benchmarks/sim_throughput.py --seconds 10 --game 5v5 --processes 1 --schema 3

Prints one record per (game, processes): ``game`` ("1v1" / "5v5"), ``processes``, ``env_steps_per_s``
(decisions of one game per second, each = frameskip ticks), ``agent_steps_per_s`` (env steps x agents),
``game_seconds_per_s`` (simulated game time per wall second), plus the per-step split between the core step,
the encoder and the action sampling (single-process runs, shares of CPU time) and ``encode_us_per_agent_step``
(CPU microseconds the encoder spends per agent and step, the figure to compare between schema versions).

The wall-clock rates drop when other jobs share the cores. ``agent_steps_per_cpu_s`` divides by the CPU time the
stepping processes got instead (per process, i.e. per core), which is what "agent-steps/s per core" means on a
busy machine; it still includes the slowdown from sharing caches with other jobs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time

import numpy as np


def run_one(game: str, seconds: float, num_games: int, seed: int, schema: int = 1, queue=None) -> dict:
    import torch

    torch.set_num_threads(1)
    from fivectl.config.game import GameConfig
    from fivectl.schema import load_schema
    from fivectl.sim import MobaEnv

    team_size, lanes = (1, 1) if game == "1v1" else (5, 3)
    cfg = GameConfig(team_size=team_size, lanes=lanes, time_limit_s=600.0)
    env = MobaEnv(cfg, num_games, seed, load_schema(schema))
    rng = np.random.default_rng(seed)
    env.reset()
    for _ in range(20):  # compile / warm up
        env.step(env.sample_random_actions(rng))
    encode_s = [0.0]
    plain_encode = env.encoder.encode

    def timed_encode(*args):  # split env.step into core kernel and encoder without touching the env
        t = time.process_time()
        out = plain_encode(*args)
        encode_s[0] += time.process_time() - t
        return out

    env.encoder.encode = timed_encode
    steps = 0
    t_sample = t_step = 0.0
    t0 = time.perf_counter()
    c0 = time.process_time()
    while time.perf_counter() - t0 < seconds:
        a0 = time.process_time()
        actions = env.sample_random_actions(rng)
        a1 = time.process_time()
        env.step(actions)
        a2 = time.process_time()
        t_sample += a1 - a0
        t_step += a2 - a1
        steps += 1
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    out = {
        "env_steps": steps * num_games,
        "wall_s": wall,
        "cpu_s": cpu,
        "agents": env.agents_per_game,
        "step_seconds": env.cfg.frameskip / env.cfg.fps,
        "sample_frac": t_sample / cpu,
        "encode_frac": encode_s[0] / cpu,
        "encode_us_per_agent_step": 1e6 * encode_s[0] / (steps * num_games * env.agents_per_game),
        "core_frac": (t_step - encode_s[0]) / cpu,
    }
    if queue is not None:
        queue.put(out)
    return out


def measure(game: str, processes: int, seconds: float, num_games: int, schema: int = 1) -> dict:
    if processes == 1:
        parts = [run_one(game, seconds, num_games, 0, schema)]
    else:
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        procs = [ctx.Process(target=run_one, args=(game, seconds, num_games, i, schema, q)) for i in range(processes)]
        for p in procs:
            p.start()
        parts = [q.get() for _ in procs]
        for p in procs:
            p.join()
    env_steps_per_s = sum(p["env_steps"] / p["wall_s"] for p in parts)
    env_steps_per_cpu_s = sum(p["env_steps"] / p["cpu_s"] for p in parts) / len(parts)
    rec = {
        "game": game,
        "schema": schema,
        "processes": processes,
        "num_games_per_process": num_games,
        "env_steps_per_s": round(env_steps_per_s, 1),
        "agent_steps_per_s": round(env_steps_per_s * parts[0]["agents"], 1),
        "game_seconds_per_s": round(env_steps_per_s * parts[0]["step_seconds"], 1),
        "agent_steps_per_cpu_s": round(env_steps_per_cpu_s * parts[0]["agents"], 1),
        "cpu_share": round(sum(p["cpu_s"] / p["wall_s"] for p in parts) / len(parts), 3),
    }
    if processes == 1:
        rec.update({k: round(parts[0][k], 3) for k in ("core_frac", "encode_frac", "sample_frac")})
        rec["encode_us_per_agent_step"] = round(parts[0]["encode_us_per_agent_step"], 2)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description="Embedded MOBA throughput")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured wall seconds per configuration")
    ap.add_argument("--games", type=int, default=64, help="games per process (batched)")
    ap.add_argument("--json", action="store_true", help="print the records as one JSON list")
    ap.add_argument("--game", choices=("1v1", "5v5"), action="append", help="only this game (repeatable)")
    ap.add_argument("--processes", type=int, choices=(1, 2), action="append", help="only this many processes")
    ap.add_argument("--schema", type=int, default=1, help="observation schema version to encode (default 1)")
    args = ap.parse_args()
    records = []
    for game in args.game or ("1v1", "5v5"):
        for processes in args.processes or (1, 2):
            rec = measure(game, processes, args.seconds, args.games, args.schema)
            records.append(rec)
            if not args.json:
                print(rec, flush=True)
    if args.json:
        print(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
