"""Fill numba's on-disk cache with the game's kernels, compiled in parallel processes.

On a machine whose cache is cold, the first process that plays a game compiles the simulator's four large kernels
one after another: about 190 s on one core of a 2-core AMD EPYC (``step_all`` 74 s, ``encode_all`` 58 s,
``decide_all`` 30 s, ``reset_all`` 24 s; benchmarks/RESULTS.md). They compile independently of each other, so
``warm_cache`` splits them over processes that only compile: in each, a tiny game is reset and stepped and the bots
asked to act with every kernel call replaced by a compile for the call's argument types (the types a real call
would compile for), skipping the kernels another process owns. The cache then holds what a game needs, in the time
of the largest share.

    python -m fivectl.sim.warmup            # every kernel, two processes
    python -m fivectl.sim.warmup step_all   # one process's share
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from importlib import import_module

import numpy as np

# kernel -> (module whose global the caller looks up, attribute): where a call can be intercepted
KERNELS: dict[str, tuple[str, str]] = {
    "step_all": ("fivectl.sim.core", "step_all"),
    "encode_all": ("fivectl.sim.observe.encoder", "encode_all"),
    "decide_all": ("fivectl.sim.bots", "decide_all"),
    "reset_all": ("fivectl.sim.core", "reset_all"),
}
# Two shares of about 100 s each on that CPU (compile seconds above), the largest first.
SHARES: tuple[tuple[str, ...], ...] = (("step_all", "reset_all"), ("encode_all", "decide_all"))


Handler = Callable[[str, object, tuple], None]
"""Called instead of a kernel: (kernel name, its numba dispatcher, the call's arguments)."""


@contextmanager
def intercepted(handler: Handler) -> Iterator[None]:
    """Within the block, every call to a kernel of ``KERNELS`` goes to ``handler`` instead; none runs."""
    saved = []
    for name, (module_name, attr) in KERNELS.items():
        module = import_module(module_name)
        dispatcher = getattr(module, attr)
        saved.append((module, attr, dispatcher))
        setattr(module, attr, lambda *args, name=name, dispatcher=dispatcher: handler(name, dispatcher, args))
    try:
        yield
    finally:
        for module, attr, dispatcher in saved:
            setattr(module, attr, dispatcher)


def argument_types(args: tuple) -> tuple:
    """The numba types a call with ``args`` compiles for (what the dispatcher computes at a call)."""
    from numba import typeof

    return tuple(typeof(arg) for arg in args)


def play_kernel_calls(handler: Handler) -> None:
    """A 1v1 reset, a step and a bot's decision, with every kernel call going to ``handler`` (so the game's
    arrays stay as allocated: nothing here depends on their contents). Two games, not one: a slice of one game's
    state is contiguous both ways, which numba types as another layout (another compile) than a batch's."""
    from fivectl.config.game import GameConfig
    from fivectl.schema.spec import load_schema
    from fivectl.sim.bots import BotMemory, bot_actions
    from fivectl.sim.env import MobaEnv

    with intercepted(handler):
        env = MobaEnv(GameConfig(team_size=1, lanes=1), num_games=2, seed=0, schema=load_schema(1))
        obs = env.reset()
        env.step(np.zeros((env.num_games, env.agents_per_game, 4), dtype=np.int64))
        team = np.zeros(env.num_games, dtype=np.int64)
        bot_actions(
            env, obs, team, "easy", BotMemory.empty(env.num_games, env.team_size), np.random.default_rng(0)
        )


def compile_kernels(kernels: Iterable[str]) -> None:
    """Compile ``kernels`` (a cache load, or a compile and a save) for the argument types a game calls them with."""
    chosen = set(kernels)
    unknown = sorted(chosen - set(KERNELS))
    if unknown:
        raise ValueError(f"unknown kernels {unknown}; known: {sorted(KERNELS)}")

    def compile_chosen(name: str, dispatcher, args: tuple) -> None:
        if name in chosen:
            dispatcher.compile(argument_types(args))

    play_kernel_calls(compile_chosen)


def warm_cache(shares: tuple[tuple[str, ...], ...] = SHARES) -> None:
    """Compile every share in its own process, all at once; returns when all are done. A process that fails
    leaves its kernels to be compiled on first use, as without this (the error goes to stderr)."""
    procs = [subprocess.Popen([sys.executable, "-m", "fivectl.sim.warmup", *share]) for share in shares]
    for proc in procs:
        proc.wait()


def main(argv: list[str]) -> None:
    if argv:
        try:
            compile_kernels(argv)
        except ValueError as err:  # bad usage: one line and exit 2, as fivectl's commands do
            print(f"fivectl.sim.warmup: {err}", file=sys.stderr)
            sys.exit(2)
    else:
        warm_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
