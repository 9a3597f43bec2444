"""``[selfplay]``: the opponent pool (paper appendix N)."""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import Schedule, param

SCRIPTED_BOTS = ("passive", "easy", "medium")  # fivectl.sim.BOT_LEVELS (config sits below the game)


@dataclass
class SelfPlayConfig:
    latest_fraction: float = param(
        0.8, "Fraction of games against the latest parameters (paper: 0.8).", ge=0, le=1
    )
    add_every: int = param(10, "Iterations between adding the current version to the pool (paper: 10).", ge=1)
    eta: float = param(
        0.01, "Quality learning rate: q_i -= eta / (N p_i) when the agent beats opponent i.", gt=0
    )
    max_pool: int = param(0, "Largest pool size (oldest dropped); 0 = unbounded.", ge=0)
    bot_fraction: Schedule = param(
        factory=lambda: Schedule.constant(0.0),
        doc="Fraction of games against the scripted bots in `bots` (a curriculum outside the paper, which trains "
        "on self-play only): they teach the policy to answer a hero that attacks it, which self-play between "
        "farming copies rarely shows. A schedule, so bots can join once self-play has taught the basics.",
        ge=0,
        le=1,
    )
    bots: list[str] = param(
        factory=lambda: ["bot:easy"],
        doc="Scripted opponents for `bot_fraction` of the games, one drawn uniformly per game (a level named "
        "twice is drawn twice as often). With several levels the metrics keep each one's win rate too "
        "(bot_win_rate_recent_LEVEL).",
    )
    past_versions_per_batch: int = param(
        1,
        "Distinct past versions a worker draws per round of game starts (each of its games once: all of them "
        "when they start together, else one game length of staggered starts, train.game_phases); each game "
        "that meets a past version plays one of them at random, so its opponent is still distributed as p. "
        "Each distinct network is one more forward pass per step; 0 draws every game independently.",
        ge=0,
    )

    past_games_together: bool = param(
        False,
        "Draw 'latest or past version' once per round of game starts (see past_versions_per_batch) instead of "
        "once per game. Each "
        "game still meets a past version with probability 1 - latest_fraction, but a worker runs a past "
        "version's network (one more forward pass per step, about a third of the quickstart's rollout time) "
        "only in that share of its rounds instead of in nearly all of them.",
    )

    def validate(self) -> list[str]:
        known = [f"bot:{level}" for level in SCRIPTED_BOTS]
        errors = [
            f"selfplay.bots: unknown bot {b!r} (known: {', '.join(known)})"
            for b in self.bots
            if b not in known
        ]
        if any(y > 0 for _, y in self.bot_fraction.points) and not self.bots:
            errors.append("selfplay.bots: empty, but bot_fraction > 0 asks for games against bots")
        return errors
