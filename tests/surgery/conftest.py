"""Fixtures of the surgery tests (the helpers live in ``surgery_helpers``)."""

from surgery_helpers import parent_run, schemas_dir, tiny_run_template

__all__ = ["parent_run", "schemas_dir", "tiny_run_template"]
