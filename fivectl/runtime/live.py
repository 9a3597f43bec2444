"""The live view of a training run: a rich panel on a terminal, plain log lines otherwise (stderr)."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

SHOWN = (
    ("version", "version", "{:d}"),
    ("samples", "samples", "{:,.0f}"),
    ("samples/s", "samples_per_s", "{:,.0f}"),
    ("staleness", "staleness_mean", "{:.2f}"),
    ("sample reuse", "sample_reuse", "{:.2f}"),
    ("policy loss", "policy_loss", "{:+.4f}"),
    ("value loss", "value_loss", "{:.4f}"),
    ("entropy", "entropy", "{:.3f}"),
    ("approx kl", "approx_kl", "{:.4f}"),
    ("explained var", "explained_variance", "{:+.3f}"),
    ("win rate vs past", "pool_past_win_rate_recent", "{:.3f}"),
    ("win rate vs bots", "bot_win_rate_recent", "{:.3f}"),
    ("opponent pool", "pool_size", "{:d}"),
    ("TrueSkill mu", "trueskill_mu", "{:.1f}"),
    ("anneal fraction", "anneal_fraction", "{:.3f}"),
    ("game length s", "game_seconds", "{:.0f}"),
    ("|reward|/step", "reward_abs_mean", "{:.4f}"),
    ("workers alive", "workers_alive", "{:d}"),
    ("in flight", "fragments_in_flight", "{:d}"),
)


PER_BOT_LEVEL = "bot_win_rate_recent_"  # one per level when selfplay.bots mixes levels


def shown(metrics: dict[str, Any]) -> list[tuple[str, str, str]]:
    """SHOWN, with a row per bot level after the win rate against all bots when the metrics have them."""
    levels = [
        (f"  vs bot:{key.removeprefix(PER_BOT_LEVEL)}", key, "{:.3f}")
        for key in sorted(metrics)
        if key.startswith(PER_BOT_LEVEL)
    ]
    at = next(i for i, (_, key, _) in enumerate(SHOWN) if key == "bot_win_rate_recent") + 1
    return [*SHOWN[:at], *levels, *SHOWN[at:]]


def _fmt(fmt: str, value: Any) -> str:
    if value is None:
        return "-"
    try:
        if "d}" in fmt:
            value = int(value)
        return fmt.format(value)
    except (TypeError, ValueError):
        return str(value)


class LiveView:
    """Call ``update(metrics)`` after each iteration and ``note(text)`` for events (worker restarts, checkpoints)."""

    def __init__(self, title: str, console: Console | None = None, log_every_s: float = 10.0):
        self.console = console or Console(stderr=True)
        self.title = title
        self.log_every_s = log_every_s
        self.interactive = self.console.is_terminal
        self._live: Live | None = None
        self._last_log = 0.0
        self._notes: list[str] = []
        self._last_metrics: dict[str, Any] = {}

    def __enter__(self) -> LiveView:
        if self.interactive:
            self._live = Live(self._render({}), console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def note(self, text: str) -> None:
        self._notes = [*self._notes[-4:], text]
        if self._live is None:
            self.console.print(f"[fivectl] {text}", highlight=False, soft_wrap=True, markup=False)
        else:
            self._live.update(self._render(self._last_metrics))

    def update(self, metrics: dict[str, Any]) -> None:
        self._last_metrics = metrics
        if self._live is not None:
            self._live.update(self._render(metrics))
            return
        now = time.monotonic()
        if now - self._last_log >= self.log_every_s:
            self._last_log = now
            parts = [f"{key}={_fmt(fmt, metrics[key])}" for _, key, fmt in shown(metrics) if key in metrics]
            self.console.print("[fivectl] " + " ".join(parts), highlight=False, soft_wrap=True, markup=False)

    def _render(self, metrics: dict[str, Any]) -> Table:
        table = Table(title=self.title, show_header=False, expand=False)
        table.add_column("metric", style="cyan")
        table.add_column("value", justify="right")
        for label, key, fmt in shown(metrics):
            table.add_row(label, _fmt(fmt, metrics.get(key)))
        for text in self._notes:
            table.add_row("[dim]event[/]", f"[dim]{text}[/]")
        return table
