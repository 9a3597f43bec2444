"""Observation schemas (data files under ``schemas/obs/``) and the encoder that fills them from game state."""

from fivectl.schema.spec import ActionSpec, Field, Group, ObsSchema, available_versions, load_schema

__all__ = ["ActionSpec", "Field", "Group", "ObsSchema", "available_versions", "load_schema"]
