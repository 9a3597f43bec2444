"""One config source: recipe dataclasses with per-field docs, loaded from TOML (``recipes/``)."""

from fivectl.config.anneal import AnnealConfig
from fivectl.config.curriculum import CurriculumConfig
from fivectl.config.eval import EvalConfig
from fivectl.config.fields import Schedule, param
from fivectl.config.game import GameConfig
from fivectl.config.model import ModelConfig
from fivectl.config.recipe import Recipe, load_recipe, recipe_from_dict
from fivectl.config.reward import RewardConfig
from fivectl.config.selfplay import SelfPlayConfig
from fivectl.config.train import TrainConfig

__all__ = [
    "AnnealConfig",
    "CurriculumConfig",
    "EvalConfig",
    "GameConfig",
    "ModelConfig",
    "Recipe",
    "RewardConfig",
    "Schedule",
    "SelfPlayConfig",
    "TrainConfig",
    "load_recipe",
    "param",
    "recipe_from_dict",
]
