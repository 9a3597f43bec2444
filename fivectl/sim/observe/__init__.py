"""The game's observations: batched game state -> the arrays of a schema version (paper appendix E).

Design (so that a schema v2 is a TOML edit plus a few lines here):

- Every group name maps to a *source* (``GROUP_SOURCES``): which units or slots it reads (heroes, lane creeps,
  buildings, neutrals, own abilities, own items, terrain around the hero, global/self/previous-action vectors).
- Every field name maps, per source, to a *feature code* in a registry (``UNIT_FEATURES``, ``SELF_FEATURES``,
  ...). A field of shape ``[k]`` uses k columns ``(code, 0..k-1)``. Retired fields are fed their constant.
- The schema is compiled into small integer tables (group table, per-column codes); one numba kernel walks them
  for every game and agent and calls the feature function of each column — no Python loop over units or agents.
  Adding a field = add ``name -> code`` to a registry (``registry.py``) and a branch computing it in the matching
  ``*_feature`` function (``features.py``); adding a group = add its source.
- Kernel functions take a handful of namedtuples, never loose arrays: the game state ``S``, layout ``L`` and
  parameters ``P`` (``fivectl.sim.state``), the compiled tables ``T`` (``EncoderTables``), the output buffers
  ``B`` (``ObsBuffers``) and the scratch ``X`` (``EncoderScratch``). A feature that reads another state array,
  or a new table, therefore changes no signature. The feature functions are inlined, so reading the tuples
  there costs nothing.
- Unit sets are encoded in two passes because fog of war is shared by a team: per game and team, the observed
  units of each set and their rows of team-level features (``unit_team_feature``) are computed once; per hero,
  the closest ones are selected, their rows copied, and only the columns that depend on the observing hero
  (``OBSERVER_UNIT_FEATURES``: offsets, distance, targeting, range; ``unit_observer_feature``) are computed. A
  new unit feature that depends on the observing hero (not only on its team) goes in that list and function.

Unit sets keep the closest observed units (ties by unit index), with masks. Units in fog are not observed, except
enemy heroes, which keep their last seen state (``seen_age`` > 0 tells how old it is). For targetable unit sets the
encoder records which unit each target slot holds (``State.slot_unit``) so the game can resolve the unit-target
action; ``action_mask``, ``target_mask`` and ``param_mask`` come from the same rules the game uses to execute.

Arrays are written into three flat buffers (float32, int32, bool) with each key's block contiguous, so every
``obs[key]`` is a C-contiguous ``[G, A, *shape]`` view without copies.

Modules: ``registry`` (sources and feature codes), ``tables`` (a schema compiled into the kernel's tables),
``features`` (the feature functions), ``units`` (unit sets: observed units, closest per hero, target slots),
``masks`` (action, target and parameter masks), ``kernel`` (``encode_all``), ``encoder`` (``Encoder``).
The schema's data model (``fivectl.schema``) knows nothing of this package; this package reads the schema.
"""

from fivectl.sim.observe.encoder import MASK_KEYS, Encoder
from fivectl.sim.observe.kernel import encode_all
from fivectl.sim.observe.registry import GROUP_SOURCES, KM, OBSERVER_UNIT_FEATURES, SOURCE_FEATURES
from fivectl.sim.observe.tables import compile_schema

__all__ = [
    "GROUP_SOURCES",
    "KM",
    "MASK_KEYS",
    "OBSERVER_UNIT_FEATURES",
    "SOURCE_FEATURES",
    "Encoder",
    "compile_schema",
    "encode_all",
]
