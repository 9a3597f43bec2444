"""The cache warm-up compiles exactly what a game's kernel calls compile, and leaves the kernels in place."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import numpy as np

from fivectl.config.game import GameConfig
from fivectl.schema.spec import load_schema
from fivectl.sim.bots import BotMemory, bot_actions
from fivectl.sim.env import MobaEnv
from fivectl.sim.warmup import KERNELS, SHARES, argument_types, play_kernel_calls


def dispatcher(name: str):
    module_name, attr = KERNELS[name]
    return getattr(import_module(module_name), attr)


def test_the_warm_up_compiles_the_signatures_a_real_game_calls_with():
    seen: dict[str, set] = {}
    play_kernel_calls(lambda name, _, args: seen.setdefault(name, set()).add(argument_types(args)))
    assert set(seen) == set(KERNELS)  # a kernel moved or renamed would no longer be warmed

    env = MobaEnv(GameConfig(team_size=1, lanes=1), num_games=3, seed=1, schema=load_schema(1))
    obs = env.reset()
    obs, *_ = env.step(env.sample_random_actions(np.random.default_rng(0), obs))
    bot_actions(env, obs, np.array([0, 1, 0]), "easy", BotMemory.empty(3, 1), np.random.default_rng(0))
    for name, types in seen.items():
        compiled = {tuple(signature) for signature in dispatcher(name).signatures}
        assert types <= compiled, f"{name}: the warm-up compiles {types}, a game uses {compiled}"


def test_the_kernels_are_restored_after_the_intercepted_calls():
    before = {name: dispatcher(name) for name in KERNELS}
    play_kernel_calls(lambda *_: None)
    assert {name: dispatcher(name) for name in KERNELS} == before


def test_the_shares_cover_every_kernel_once():
    names = [name for share in SHARES for name in share]
    assert sorted(names) == sorted(KERNELS)


def test_an_unknown_kernel_is_a_one_line_error():
    proc = subprocess.run(
        [sys.executable, "-m", "fivectl.sim.warmup", "no_such_kernel"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "unknown kernels ['no_such_kernel']" in proc.stderr
    assert "Traceback" not in proc.stderr
