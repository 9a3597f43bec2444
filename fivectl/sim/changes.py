"""The registry of environment changes: named, documented variants of the embedded MOBA (paper appendix B).

Over ten months the game OpenAI Five played changed under it (new heroes, items, patches) and each change was
*annealed* in: the fraction of rollout games that use it rose from 0 to 100%. A :class:`GameChange` is one such
variant of the game. ``MobaEnv.set_change(name, fraction)`` makes every game that starts from then on run it with
probability ``fraction`` (drawn from that game's own random stream, ``core.draw_variant``); the game's rules
are knobs in its state arrays, so games with and without the change are stepped by the same kernels in one batch.

Some changes need the model to grow first: a new item with an active ability is used through a new primary action
(``needs_action``: ``fivectl surgery add-action``), a new hero needs larger hero-id vocabularies
(``needs_hero_vocab``). :func:`missing_surgery` says which command a run needs before the change can be annealed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np

from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema
from fivectl.sim import data as D
from fivectl.sim import state as ST

KINDS = ("rule", "item", "hero", "canary")
NEW_ITEM_ACTION = "item4"
"""The primary action of the change item (``data.NEW_ITEM_SLOT``); the schema's action space must have it."""
HERO_ID_FIELDS = ("hero_id", "ally_lineup", "enemy_lineup")
"""Categorical fields that hold hero ids + 1: with the 18th hero their vocabulary must be ``needs_hero_vocab``."""


@dataclass(frozen=True)
class GameChange:
    name: str
    summary: str  # one line, for ``fivectl anneal list``
    doc: str  # what changes in the game and why one would anneal it
    kind: str  # "rule" | "item" | "hero" | "canary"
    needs_action: str | None = None  # a primary action the schema (and the model's action head) must have
    needs_hero_vocab: int | None = None  # the hero-id vocabulary the schema (and the model) must have
    knobs: tuple[tuple[int, float], ...] = field(default=())  # (state.CK_* column, value) in Params.change

    def params_change(self, fraction: float) -> np.ndarray:
        """``Params.change`` for this change at ``fraction``."""
        change = ST.no_change()
        change[ST.CK_FRACTION] = float(fraction)
        for column, value in self.knobs:
            change[column] = value
        return change


def _register(*changes: GameChange) -> dict[str, GameChange]:
    for c in changes:
        assert c.kind in KINDS, c
    return {c.name: c for c in changes}


CHANGES: dict[str, GameChange] = _register(
    GameChange(
        name="fast-waves",
        summary=f"creep waves every {D.FAST_WAVE_INTERVAL_S:g} s instead of {D.WAVE_INTERVAL_S:g} s",
        doc=(
            f"A rule change (a patch): every lane spawns its creep wave every {D.FAST_WAVE_INTERVAL_S:g} s instead "
            f"of every {D.WAVE_INTERVAL_S:g} s, so there is half again as much gold and XP in lane and pushes hit "
            "harder. The observation 'next_wave' follows the game's own interval. No surgery is needed: the "
            "model sees the same inputs, but its timing of last hits and pushes was learned on 30 s waves, which is "
            "why the change is annealed rather than switched on."
        ),
        kind="rule",
        knobs=((ST.CK_WAVE_S, D.FAST_WAVE_INTERVAL_S),),
    ),
    GameChange(
        name="canary-mirror",
        summary="the hero's move offsets are mirrored (a hard rule change: moving must be relearned)",
        doc=(
            "A hard rule change: under it a hero's move order goes to the offset reflected through the hero "
            "(the 9x9 grid cell (x, y) becomes (-x, -y)), so a policy trained on the normal game walks away from "
            "where it meant to go and the scripted bots play worse too. The guard compares each version with the "
            "anneal's start version, both under the change, so it measures whether training keeps up with the "
            "new rules, not how much the rules hurt."
        ),
        kind="rule",
        knobs=((ST.CK_MIRROR_MOVES, 1.0),),
    ),
    GameChange(
        name="canary-swapped-credit",
        summary="each hero is rewarded with the enemy's reward (known to hurt: for testing the anneal guard)",
        doc=(
            "A canary, known to hurt: in the games that run it every hero is credited with what the enemy hero "
            "earned, win/loss included, as a broken reward patch would; the game itself and who wins it are "
            "unchanged. A policy trained on a share of such games learns to lose them, and since it cannot tell "
            "which games they are, it plays worse in all of them, so TrueSkill falls as the fraction rises: the "
            "anneal guard must revert it and slow the ramp. Never anneal it into a real experiment."
        ),
        kind="canary",
        knobs=((ST.CK_SWAP_CREDIT, 1.0),),
    ),
    GameChange(
        name="storm-maul",
        summary="a new item, the storm maul: active stun on an enemy unit, used through the new action item4",
        doc=(
            f"A new item with an active ability: the storm maul (+10 damage; active: {D.ITEM_STUN_S:g} s stun and "
            "100 magic damage on an enemy unit within 600, cooldown 18 s, cost 2300). Under the change every hero "
            "buys it first, in the first stat slot. Its ability is used through a new primary action, item4, "
            "available only while the hero owns a ready maul; a run gets that action with "
            "`fivectl surgery add-action RUN --action item4 --out RUN2` (a new action logit that has zero "
            "probability wherever the game masks it, which is everywhere without the change)."
        ),
        kind="item",
        needs_action=NEW_ITEM_ACTION,
        knobs=((ST.CK_NEW_ITEM, 1.0),),
    ),
    GameChange(
        name="new-hero",
        summary=f"an 18th hero, {D.ALL_HERO_NAMES[D.NEW_HERO]}, joins the pool lineups are drawn from",
        doc=(
            f"A new hero: {D.ALL_HERO_NAMES[D.NEW_HERO]} (ranged 525, venom spit, chain hex, thorn armor, glacier) "
            "joins the hero pool of the games that run the change, so random lineups may include it. The model "
            "sees hero ids as categorical inputs whose vocabularies hold the 17 heroes and 'none'; a run gets one "
            f"more embedding row in each with `fivectl surgery add-hero RUN --vocab {D.N_HEROES + 2} --out RUN2` "
            "(exactly the same function on old games). Annealed because every learned matchup meets an unknown "
            "hero."
        ),
        kind="hero",
        needs_hero_vocab=D.N_HEROES + 2,
        knobs=((ST.CK_NEW_HERO, 1.0),),
    ),
)


def change_names() -> list[str]:
    return list(CHANGES)


def get_change(name: str) -> GameChange:
    """The registered change ``name``; an unknown name is BadInput with the closest registered name."""
    change = CHANGES.get(name)
    if change is None:
        close = difflib.get_close_matches(name, list(CHANGES), n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BadInput(f"unknown environment change {name!r}{hint}; known: {', '.join(CHANGES)}")
    return change


def hero_vocab(schema: ObsSchema) -> int | None:
    """The smallest vocabulary among the schema's hero-id fields (None if it has none)."""
    sizes = [f.vocab for g in schema.groups for f in g.fields if f.name in HERO_ID_FIELDS and f.kind == "categorical"]
    return min(sizes) if sizes else None


def missing_surgery(change: GameChange, schema: ObsSchema, run: str = "RUN") -> str | None:
    """The command a run must go through before ``change`` can be annealed into it, or None.

    ``schema`` is what the run's model was built from, which is all that decides it: the checkpoint attribute
    ``schema`` (``ObsSchema.from_json(attrs["schema"])``) or the run's ``RunDir.obs_schema(version)`` (the schema
    a surgery recorded in ``run.json``); the model's action head has one logit per ``schema.action.primary`` and its
    hero-id embeddings the fields' vocabularies. ``run`` is the run as the user named it, for the command text.
    """
    out = f"{run.rstrip('/')}-{change.name}"
    if change.needs_action is not None and change.needs_action not in schema.action.primary:
        return f"fivectl surgery add-action {run} --action {change.needs_action} --out {out}"
    if change.needs_hero_vocab is not None:
        have = hero_vocab(schema)
        if have is not None and have < change.needs_hero_vocab:
            return f"fivectl surgery add-hero {run} --vocab {change.needs_hero_vocab} --out {out}"
    return None


__all__ = ["CHANGES", "GameChange", "change_names", "get_change", "missing_surgery"]
