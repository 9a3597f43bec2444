"""Chosen lineups: hero names or ids to the hero-id arrays :meth:`fivectl.sim.MobaEnv.set_lineups` takes.

A lineup is written ``"Name1,Name2 vs Name3,Name4"`` (team or side A first); names are case-insensitive and a
hero's 0-based id (its index in ``data.HERO_NAMES``) works too. Every error is :class:`BadInput` with one line:
an unknown name comes with a did-you-mean, a duplicate or a team of the wrong size names the problem.
"""

from __future__ import annotations

import difflib
import re

import numpy as np

from fivectl.errors import BadInput
from fivectl.sim import data as D

_BY_NAME = {n.lower(): i for i, n in enumerate(D.HERO_NAMES)}


def hero_id(name: str | int) -> int:
    """The hero id of a name (any case) or of an id given as an int or a digit string."""
    text = str(name).strip()
    if text.isdigit():
        i = int(text)
        if i < D.N_HEROES:
            return i
        raise BadInput(f"hero id {i}: the pool has ids 0..{D.N_HEROES - 1}")
    if text.lower() in _BY_NAME:
        return _BY_NAME[text.lower()]
    close = difflib.get_close_matches(text.lower(), list(_BY_NAME), n=1, cutoff=0.5)
    hint = f"; did you mean {D.HERO_NAMES[_BY_NAME[close[0]]]}?" if close else ""
    raise BadInput(f"unknown hero {text!r}{hint} (heroes: {', '.join(D.HERO_NAMES)})")


def hero_names(ids) -> list[str]:
    return [D.ALL_HERO_NAMES[int(i)] for i in ids]


def parse_team(text: str, size: int | None = None) -> np.ndarray:
    """int32 hero ids of ``"Name1,Name2"`` (commas or whitespace-free names); ``size`` checks the count."""
    names = [n for n in (p.strip() for p in text.split(",")) if n]
    ids = np.array([hero_id(n) for n in names], dtype=np.int32)
    if size is not None and len(ids) != size:
        raise BadInput(f"team {text.strip()!r}: {len(ids)} hero(es), a {size}v{size} game needs {size}")
    return ids


def parse_lineup(text: str, team_size: int) -> np.ndarray:
    """int32 [2, team_size] from ``"A1,A2 vs B1,B2"``; a hero may appear once in the whole lineup."""
    parts = _split_vs(text)
    if len(parts) != 2:
        raise BadInput(f"lineup {text!r}: expected two teams separated by 'vs', e.g. 'Ashcaller vs Kestrel'")
    lineup = np.stack([parse_team(p, team_size) for p in parts])
    check_lineup(lineup, team_size)
    return lineup


def check_lineup(lineup: np.ndarray, team_size: int, pool: np.ndarray | None = None) -> None:
    """BadInput unless ``lineup`` is [2, team_size] distinct hero ids (from ``pool`` when given)."""
    lineup = np.asarray(lineup)
    if lineup.shape != (2, team_size):
        raise BadInput(f"lineup: expected {team_size} heroes per team, got shape {lineup.shape}")
    flat = lineup.ravel()
    if ((flat < 0) | (flat >= D.N_HEROES)).any():
        raise BadInput(f"lineup: hero ids must be 0..{D.N_HEROES - 1}, got {flat.tolist()}")
    names, counts = np.unique(flat, return_counts=True)
    if (counts > 1).any():
        raise BadInput(f"lineup: {', '.join(hero_names(names[counts > 1]))} picked twice")
    if pool is not None:
        outside = np.setdiff1d(flat, pool)
        if len(outside):
            raise BadInput(f"lineup: {', '.join(hero_names(outside))} not in the game's hero pool")


def format_lineup(lineup: np.ndarray) -> str:
    return " vs ".join(",".join(hero_names(team)) for team in np.asarray(lineup))


def _split_vs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\s+vs\.?\s+|\s*\|\s*", text.strip(), flags=re.IGNORECASE)]


__all__ = ["check_lineup", "format_lineup", "hero_id", "hero_names", "parse_lineup", "parse_team"]
