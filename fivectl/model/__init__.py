"""The policy/value network (paper appendix H; the Honor of Kings 1v1 paper): see ``policy.PolicyNet``."""

from fivectl.model.layout import InputSlice, embedding_param, field_input_slices, group_fc_columns
from fivectl.model.policy import ActOutput, EvalOutput, PolicyNet, cross_hero_pool, obs_to_torch, run_lstm
from fivectl.model.summary import model_summary, parameter_blocks

__all__ = [
    "ActOutput",
    "EvalOutput",
    "InputSlice",
    "PolicyNet",
    "cross_hero_pool",
    "embedding_param",
    "field_input_slices",
    "group_fc_columns",
    "model_summary",
    "obs_to_torch",
    "parameter_blocks",
    "run_lstm",
]
