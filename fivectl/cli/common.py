"""What every subcommand shares: error handling with exit codes, JSON output, stderr console."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from fivectl.errors import EXIT_BAD_INPUT, EXIT_FAILED, ConfigError, FivectlError

err_console = Console(stderr=True)
out_console = Console()


def debug_enabled() -> bool:
    return os.environ.get("FIVECTL_DEBUG", "") not in ("", "0")


def fail(message: str, code: int) -> None:
    # escaped: messages quote paths and library errors that may contain [brackets]
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def handle_errors(fn: Callable) -> Callable:
    """Known errors become a one-line message and their exit code; FIVECTL_DEBUG=1 re-raises for a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except ConfigError as e:
            if debug_enabled():
                raise
            if len(e.errors) == 1:
                fail(f"{e.source}: {e.errors[0]}", e.exit_code)
            err_console.print(f"[bold red]error:[/] {e.source}: {len(e.errors)} errors", highlight=False)
            for line in e.errors:
                err_console.print(f"  {line}", highlight=False, soft_wrap=True)
            raise typer.Exit(e.exit_code) from None
        except FivectlError as e:
            if debug_enabled():
                raise
            fail(str(e), e.exit_code)
        except KeyboardInterrupt:
            if debug_enabled():
                raise
            fail("interrupted", EXIT_FAILED)
        except OSError as e:
            if debug_enabled():
                raise
            where = f" {e.filename}" if getattr(e, "filename", None) else ""
            fail(f"{e.strerror or e}{':' if where else ''}{where}", EXIT_FAILED)
        except Exception as e:  # noqa: BLE001 - the last line of defence: no traceback without FIVECTL_DEBUG
            if debug_enabled():
                raise
            fail(
                f"internal error: {type(e).__name__}: {e} (set FIVECTL_DEBUG=1 for the traceback)",
                EXIT_FAILED,
            )

    return wrapper


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")
    sys.stdout.flush()


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "err_console",
    "fail",
    "handle_errors",
    "out_console",
    "print_json",
]
