"""Observation schemas: the data model of the versioned files under ``schemas/obs/`` (groups, fields, actions) and
the team-relative frame. The encoder that fills them from game state is the game's (``fivectl.sim.observe``);
nothing here imports the game."""

from fivectl.schema.spec import ActionSpec, Field, Group, ObsSchema, available_versions, load_schema

__all__ = ["ActionSpec", "Field", "Group", "ObsSchema", "available_versions", "load_schema"]
