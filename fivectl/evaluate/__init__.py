"""Evaluation: agents named by spec strings, matches between them, TrueSkill ratings (paper appendix J)."""

from fivectl.evaluate import policy_agent  # noqa: F401 - registers the RUN_DIR@VERSION agent specs
from fivectl.evaluate.agents import Agent, known_agent_specs, parse_agent, register_agent_kind
from fivectl.evaluate.match import MatchResult, play_match, wilson_interval

__all__ = [
    "Agent",
    "MatchResult",
    "known_agent_specs",
    "parse_agent",
    "play_match",
    "register_agent_kind",
    "wilson_interval",
]
