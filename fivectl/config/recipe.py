"""The whole recipe: one dataclass per TOML section, loaded and validated in one place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fivectl.config.anneal import AnnealConfig
from fivectl.config.curriculum import CurriculumConfig
from fivectl.config.eval import EvalConfig
from fivectl.config.fields import param
from fivectl.config.game import GameConfig
from fivectl.config.loader import apply_overrides, build, raise_if, read_toml, to_dict
from fivectl.config.model import ModelConfig
from fivectl.config.recipes import resolve_recipe
from fivectl.config.reward import RewardConfig
from fivectl.config.selfplay import SelfPlayConfig
from fivectl.config.train import TrainConfig


@dataclass
class Recipe:
    name: str = param("unnamed", "Name of the recipe, shown in run listings.")
    description: str = param("", "One line on what this recipe is for.")
    game: GameConfig = param(factory=GameConfig, doc="The embedded MOBA.")
    reward: RewardConfig = param(factory=RewardConfig, doc="Reward weights and shaping.")
    model: ModelConfig = param(factory=ModelConfig, doc="The policy network.")
    train: TrainConfig = param(factory=TrainConfig, doc="PPO, actor-learner and checkpoints.")
    selfplay: SelfPlayConfig = param(factory=SelfPlayConfig, doc="Opponent pool.")
    eval: EvalConfig = param(factory=EvalConfig, doc="TrueSkill evaluation.")
    anneal: AnnealConfig = param(factory=AnnealConfig, doc="A game change annealed into training.")
    curriculum: CurriculumConfig = param(
        factory=CurriculumConfig, doc="A first stage in a smaller game that the run starts from."
    )

    def to_dict(self) -> dict:
        return to_dict(self)


def recipe_from_dict(data: dict, source: str = "recipe", overrides: list[str] | None = None) -> Recipe:
    """Build and validate a recipe; raises ConfigError listing every problem."""
    data = apply_overrides(dict(data), overrides or [])
    errors: list[str] = []
    recipe = build(Recipe, data, errors)
    raise_if(errors, source)
    return recipe


def load_recipe(path: str | Path, overrides: list[str] | None = None) -> Recipe:
    """Load ``path`` (a TOML recipe, or the name of a shipped one), apply ``--set key=value`` overrides, validate
    everything."""
    path = resolve_recipe(path)
    return recipe_from_dict(read_toml(path), source=str(path), overrides=overrides)
