"""Errors the CLI turns into one-line messages and documented exit codes.

Exit codes: 0 ok, 1 run failed, 2 bad usage, config or input.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class FivectlError(Exception):
    """A known failure: the CLI prints ``str(self)`` on one line and exits with ``exit_code``."""

    exit_code = EXIT_FAILED


class BadInput(FivectlError):
    """Bad usage, config or input (exit 2). Nothing has been written."""

    exit_code = EXIT_BAD_INPUT


class RunFailed(FivectlError):
    """The work started but failed (exit 1)."""

    exit_code = EXIT_FAILED


class ConfigError(BadInput):
    """One or more recipe errors, each ``key.path: message``; all are reported at once."""

    def __init__(self, errors: list[str], source: str = "recipe"):
        self.errors = list(errors)
        self.source = source
        head = f"{source}: {len(self.errors)} error(s)" if len(self.errors) > 1 else f"{source}"
        super().__init__(head + ": " + "; ".join(self.errors))


class SchemaMismatch(BadInput):
    """A checkpoint, rollout or model built for one observation schema met another."""
