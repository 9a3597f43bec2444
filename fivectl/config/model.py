"""``[model]``: the policy network (paper appendix H)."""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import param


@dataclass
class ModelConfig:
    schema_version: int = param(
        2,
        "Observation schema version (schemas/obs/vN.toml) the model is built from (v2: v1 in the team-relative "
        "frame).", ge=1
    )
    unit_embed: int = param(64, "Width of the per-unit embedding produced by the shared unit MLP.", ge=1)
    unit_hidden: int = param(64, "Hidden width of the shared unit MLP.", ge=1)
    cat_embed: int = param(16, "Embedding width of each categorical field.", ge=1)
    grid_channels: int = param(8, "Channels of the nearby-terrain conv net.", ge=1)
    fc_size: int = param(256, "Width of the fully connected layer before the LSTM.", ge=4)
    cross_hero_fraction: float = param(
        0.25, "Fraction of the FC vector max-pooled across teammates (paper: 25%).", ge=0, le=1
    )
    lstm_size: int = param(128, "LSTM hidden size (paper: 4096).", ge=1)
    win_prob_grad_weight: float = param(
        0.01, "Weight of the win-probability loss gradient into the trunk.", ge=0
    )
    attention_size: int = param(64, "Width of the target-attention query and keys (HoK eq. 1).", ge=1)
    aux_hidden: int = param(64, "Hidden width of the small auxiliary prediction networks (paper D).", ge=1)
    offset_xy: bool = param(
        False,
        "Choose a move or cast offset as independent X and Y (HoK's decoupled Offset_X and Offset_Y): two heads "
        "of 9 logits whose outer sum gives the 9x9 grid's distribution, so a direction is learned per axis "
        "instead of per cell. Off: one head of 81 logits (paper F).",
    )
    learn_delay: bool = param(
        True,
        "Learn the delay head: on which frame of the frameskip to act (paper F). OpenAI Five's model never "
        "learned it and acting at the start of the frameskip was better; off, every action has delay 0 and the "
        "head is left out of the log-probability and the entropy.",
    )
    decide_every: int = param(
        1,
        "The policy decides every this many decision steps (frameskips) and holds in between: its heroes keep "
        "their current order (move, attack) and nothing is sampled or trained on for those steps. 2 halves the "
        "network's work per game second and doubles the game time each sample and each LSTM step covers (the "
        "discount follows: gamma from game seconds per decision). Scripted bots still act every frameskip.",
        ge=1,
        le=8,
    )
    aux_objectives: list[str] = param(
        factory=lambda: ["tower_t1", "tower_t2", "tower_t3", "tower_t4", "barracks", "ancient"],
        doc="Team objectives the auxiliary head predicts (one logit each: will this hero help destroy one soon); "
        "names from fivectl.sim.objectives.OBJECTIVES.",
    )

    def validate(self) -> list[str]:
        from fivectl.sim import check_objective_names  # the game's names; imported late (no cycle)

        return [f"model.aux_objectives: {e}" for e in check_objective_names(self.aux_objectives)]
