"""``[reward]``: weights of the raw reward components and the shaping (paper appendix G, Table 6)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fivectl.config.fields import Schedule, param


@dataclass
class RewardConfig:
    win: float = param(5.0, "Team reward for winning (loss: the negative). Not time-weighted.")
    death: float = param(-1.0, "Solo reward when the hero dies.")
    xp: float = param(0.002, "Solo reward per XP point gained.")
    gold: float = param(0.006, "Solo reward per gold gained.")
    gold_spent: float = param(0.0006, "Solo reward per gold spent.")
    health: float = param(2.0, "Solo reward for health-fraction change, through (x+1-(1-x)^4)/2.")
    mana: float = param(0.75, "Solo reward for mana-fraction change.")
    kill: float = param(
        -0.6, "Solo reward for a hero kill (the gold and XP it brings are rewarded separately)."
    )
    last_hit: float = param(-0.16, "Solo reward for a last hit (its gold is rewarded separately).")
    deny: float = param(0.15, "Solo reward for denying an allied creep.")
    extra_life: float = param(5.0, "Team reward for the boss's extra-life item.")
    ancient_hp: float = param(5.0, "Team reward for damage to the enemy ancient, as a fraction of its HP.")
    tower_t1: float = param(2.25, "Team reward for a tier-1 tower: 2/3 linear in HP lost, 1/3 on death.")
    tower_t2: float = param(3.0, "Team reward for a tier-2 tower.")
    tower_t3: float = param(4.5, "Team reward for a tier-3 tower.")
    tower_t4: float = param(2.25, "Team reward for a tier-4 (base) tower.")
    barracks: float = param(6.0, "Team reward for barracks.")
    off_lane: Schedule = param(
        factory=lambda: Schedule.constant(0.0),
        doc="Solo reward per game second a living hero spends off its assigned lane (observed as self.lane_assign) "
        "and outside the enemy base; negative to keep heroes on their lanes early in training (paper O.2: the lane "
        "assignment was an aid for the early game), a schedule to lift it later. 0: off. The own base counts as off "
        "the lane unless an enemy is in it, so waiting at home is no way around it. In 5v5, -0.02 did not spread "
        "the heroes and -0.1 did; lifted to 0 after 20M samples, the heroes regrouped; on a 1v1 network at "
        "entropy bonus 0.001 (--init-from), -0.1 did not spread them (benchmarks/RESULTS.md, 5v5 runs 10, 11, 13, 16 "
        "and 31).",
        le=0,
    )
    building_near: float = param(
        0.0,
        "Solo reward for enemy building HP lost while the hero is alive within 1300 units of the building, "
        "measured as the building's own component (towers and barracks: 2/3 of the HP fraction lost, 1/3 on "
        "death; the ancient: the HP fraction lost): the building rewards above go to the whole team wherever it "
        "is, this one only to the heroes who pushed. 0: off.",
        ge=0,
    )
    consumed: float = param(
        0.0,
        "Solo reward per gold of consumables the hero uses (a healing salve: 110, a clarity: 50). Purchases are "
        "scripted and restock a used consumable at once, so without it a use costs the policy nothing it sees "
        "(gold_spent even pays for the restock) while the gold it drains delays the stat items. -0.006 (the gold "
        "weight): a use costs what earning its price paid. 0: off. In the curriculum's 5v5 stage -0.006 ended the "
        "clarity habit (46 uses a game to none) and the heroes then stayed home (5v5 run 49, benchmarks/RESULTS.md).",
        le=0,
    )
    building_hit: float = param(
        0.0,
        "Solo reward per fraction of an enemy building's HP the hero's own attacks and spells take. The building "
        "rewards above go to the whole team whoever hit, and the creeps deal most of that damage: in replays of "
        "the curriculum's 5v5 stage the heroes hit enemy towers about one second a game and finished almost none "
        "(benchmarks/RESULTS.md, 5v5 run 50). 0: off. At 5, in the curriculum's 5v5 stage with seed 2, the heroes "
        "attacked buildings in 13% of their living steps after 35M samples (0.5-1.5% without it) and won 0.365 of "
        "their bot games in training (without it at most 0.155 by then), 0.585 at 45M (5v5 run 52); with seed 0 "
        "the whole curriculum won none of 100 against easy after 2 hours (5v5 run 53).",
        ge=0,
    )
    neutral_gold: float = param(
        0.0,
        "Solo reward per gold the hero takes from the neutral camps (the boss excepted), on top of `gold`, which "
        "pays that gold too. -0.006 (the gold weight): the jungle's gold is worth nothing to the reward, while its "
        "XP, the items it buys and the lanes' gold still pay. In the curriculum's 5v5 stage with seed 0 and "
        "building_hit 5, -0.006 cut the neutral units killed a game from 20-24 to 8-13 at 10-15M samples and "
        "left the heroes' attack orders on far-away neutral units (a third to half of their living steps) and "
        "the win rate against the bots (0 at 15M samples) as they were (benchmarks/RESULTS.md, 5v5 run 54). "
        "0: off.",
        le=0,
    )
    zero_sum: bool = param(True, "Subtract the enemy team's mean reward from each hero's reward (paper G).")
    time_decay: float = param(
        0.6, "Rewards other than win/loss are scaled by time_decay^(T/decay_minutes).", gt=0, le=1
    )
    decay_minutes: float = param(10.0, "Minutes over which the time decay factor applies once.", gt=0)
    team_spirit: Schedule = param(
        factory=lambda: Schedule.constant(0.3),
        doc="Team spirit tau: r_i = (1-tau) rho_i + tau mean(rho). Paper anneals 0.3 -> 1.0.",
        ge=0,
        le=1,
    )

    def weights_in_order(self, names: Sequence[str], off_lane: float | None = None) -> list[float]:
        """The weight of each component in ``names``: a scheduled weight (``off_lane``) at its value now, given by
        the caller from the training progress, or at the start of its schedule when ``None``."""
        now = {"off_lane": self.off_lane.start if off_lane is None else float(off_lane)}
        return [now[name] if name in now else float(getattr(self, name)) for name in names]
