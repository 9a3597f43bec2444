"""Scripted-bot ladder: medium vs easy, easy vs random (and the other pairs on request), N games each.

    .venv/bin/python benchmarks/bots.py --games 100 [--recipe recipes/quickstart.toml] [--seed 0] [--json]

Prints one record per pairing: wins, draws, A's win rate (a draw counts half) with its 95% Wilson interval, mean
game length, kills and towers per side, invalid-action rates and wall time. The same numbers as
``fivectl evaluate match A B --games N --json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from fivectl.config import load_recipe
from fivectl.evaluate import play_match
from fivectl.schema import load_schema

REPO = Path(__file__).resolve().parents[1]
LADDER = [("bot:medium", "bot:easy"), ("bot:easy", "random")]
EXTRA = [("bot:medium", "random"), ("bot:easy", "bot:passive"), ("bot:passive", "random")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--recipe", type=Path, default=REPO / "recipes" / "quickstart.toml")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="recipe override key=value"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--all", action="store_true", help="also medium-random, easy-passive, passive-random")
    parser.add_argument("--json", action="store_true", help="print only the JSON list")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    recipe = load_recipe(args.recipe, args.overrides)
    schema = load_schema(recipe.model.schema_version)
    records = []
    for a, b in LADDER + (EXTRA if args.all else []):
        result = play_match(
            a, b, recipe.game, games=args.games, seed=args.seed, batch=args.batch, schema=schema
        )
        record = {**result.to_dict(), "game": f"{recipe.game.team_size}v{recipe.game.team_size}"}
        record.pop("outcomes")
        records.append(record)
        if not args.json:
            lo, hi = result.a_win_rate_ci95
            print(
                f"{a} vs {b}: {result.a_wins}-{result.b_wins}-{result.draws} (W-L-D), win rate "
                f"{result.a_win_rate:.3f} [{lo:.3f}, {hi:.3f}], {result.mean_game_seconds:.0f} game-s, "
                f"{result.wall_seconds:.0f} s wall",
                file=sys.stderr,
            )
    print(json.dumps(records, indent=2))


if __name__ == "__main__":
    main()
