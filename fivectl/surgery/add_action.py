"""``surgery add-action`` and ``surgery add-hero``: grow the action space or the hero-id vocabularies of a model,
computing exactly what it did on every observation the old game can produce (paper B).

add-action appends a primary action (one the game knows, ``sim.env.PRIMARY_ACTIONS``, e.g. ``item4`` for the
storm maul of ``sim/changes.py``) to the schema's action space:

- the primary head gets a new logit row: zero weights and a bias (``--bias``, default 0). The game masks an
  action wherever it is unavailable and a masked logit is set to -1e9 before the softmax (``model/heads.py``),
  whose exponential underflows to exactly 0 in float32: the new action has exactly zero probability, and every
  old action exactly its old probability, wherever it is masked. The game makes ``item4`` available only while a
  hero owns a ready storm maul, which only games with the change have; so on old data the function is the same
  to the last bit, and when the item appears the new action starts at logit ``--bias`` (a chance to be explored,
  rather than a bias of -inf that no gradient could ever lift);
- the previous-action embedding (``prev_action.primary``, vocabulary = number of primary actions) gets a new
  row (the child's own random initialization): old data never holds the new id, so nothing reads it yet.

add-hero grows every hero-id vocabulary (``changes.HERO_ID_FIELDS``) to ``--vocab``: new embedding rows, read
only by the new heroes' ids, which old games never produce.

The schema keeps its version number and is recorded in the child's ``run.json`` and checkpoints (as ``retire``
does), so the child's games and model read the grown schema.
"""

from __future__ import annotations

from dataclasses import replace

from fivectl.config.model import ModelConfig
from fivectl.errors import BadInput
from fivectl.model.layout import embedding_param
from fivectl.schema.spec import ObsSchema
from fivectl.sim import HERO_ID_FIELDS, PRIMARY_ACTIONS, hero_vocab
from fivectl.surgery.plan import Plan, State
from fivectl.surgery.remap import TensorMap
from fivectl.surgery.schemas import did_you_mean, schema_label

PREV_PRIMARY = ("prev_action", "primary")  # the categorical field that holds the previous primary action


def with_vocab(schema: ObsSchema, grow: dict[tuple[str, str], int]) -> ObsSchema:
    """``schema`` with the vocabulary of each (group, field) in ``grow`` set to the given size."""
    groups = []
    for g in schema.groups:
        fields = tuple(replace(f, vocab=grow[(g.name, f.name)]) if (g.name, f.name) in grow else f for f in g.fields)
        groups.append(replace(g, fields=fields))
    return replace(schema, groups=tuple(groups))


def embedding_maps(plan: Plan, grow: dict[tuple[str, str], int]) -> None:
    """Old rows of every grown embedding table stay in place; new rows keep the child's initialization."""
    for (group, field), _ in grow.items():
        old = next(f for f in plan.schema_before.group(group).fields if f.name == field)
        name = embedding_param(group, field)
        plan.maps[name] = TensorMap(name, (slice(0, old.vocab),))
        plan.notes[name] = f"{grow[(group, field)] - old.vocab} new row(s), unused on old data"


def action_target_type(action: str) -> str:
    """The schema target type of a game action: item and ability slots depend on what is in them."""
    kind_names = {"move": "point", "attack": "unit", "noop": "none", "buyback": "none"}
    return kind_names.get(action, "dynamic")


def check_new_action(schema: ObsSchema, action: str) -> None:
    if action in schema.action.primary:
        raise BadInput(f"--action {action}: schema v{schema.version} already has it (primary actions: "
                       f"{', '.join(schema.action.primary)})")  # fmt: skip
    if action not in PRIMARY_ACTIONS:
        candidates = [a for a in PRIMARY_ACTIONS if a not in schema.action.primary]
        raise BadInput(
            f"--action {action}: the game has no such primary action{did_you_mean(action, candidates)} "
            f"(actions the schema lacks: {', '.join(candidates) or 'none'})"
        )


def plan_add_action(
    schema: ObsSchema,
    cfg: ModelConfig,
    team_size: int,
    action: str,
    *,
    bias: float = 0.0,
    obs_clip: float = 5.0,
    seed: int = 0,
) -> Plan:
    check_new_action(schema, action)
    n = schema.action.n_primary
    new_action = replace(
        schema.action,
        primary=(*schema.action.primary, action),
        target_type=(*schema.action.target_type, action_target_type(action)),
    )
    grow = {}
    group, field = PREV_PRIMARY
    if any(g.name == group and any(f.name == field and f.vocab == n for f in g.fields) for g in schema.groups):
        grow[PREV_PRIMARY] = n + 1
    new = replace(with_vocab(schema, grow), action=new_action)
    plan = Plan(
        "add-action",
        {"action": action, "bias": bias, "schema_after": schema_label(new)},
        schema,
        new,
        cfg,
        cfg,
        team_size,
        obs_clip=obs_clip,
        seed=seed,
    )
    plan.maps["heads.primary.weight"] = TensorMap("heads.primary.weight", (slice(0, n),), zero=[(slice(n, n + 1),)])
    plan.maps["heads.primary.bias"] = TensorMap("heads.primary.bias", (slice(0, n),))
    plan.notes["heads.primary.weight"] = f"{action}: zero weights (masked wherever the game makes it unavailable)"
    plan.notes["heads.primary.bias"] = f"{action}: bias {bias:g}"
    embedding_maps(plan, grow)

    def adjust(parent: State, child: State) -> None:
        child["heads.primary.bias"][n] = bias

    plan.adjust = adjust
    return plan


def plan_add_hero(
    schema: ObsSchema, cfg: ModelConfig, team_size: int, vocab: int, *, obs_clip: float = 5.0, seed: int = 0
) -> Plan:
    """Every hero-id vocabulary of ``schema`` grown to ``vocab`` (ids + 1; 0 = no hero)."""
    have = hero_vocab(schema)
    if have is None:
        raise BadInput(f"schema v{schema.version} has no hero-id fields ({', '.join(HERO_ID_FIELDS)})")
    if vocab <= have:
        raise BadInput(f"--vocab {vocab}: the hero-id vocabularies already hold {have}; add-hero only grows")
    grow = {
        (g.name, f.name): vocab
        for g in schema.groups
        for f in g.fields
        if f.name in HERO_ID_FIELDS and f.kind == "categorical"
    }
    new = with_vocab(schema, grow)
    plan = Plan(
        "add-hero",
        {"vocab": vocab, "schema_after": schema_label(new)},
        schema,
        new,
        cfg,
        cfg,
        team_size,
        obs_clip=obs_clip,
        seed=seed,
    )
    embedding_maps(plan, grow)
    return plan
