"""``Encoder``: a schema compiled once, its scratch, and ``encode`` filling the flat buffers whose blocks are the
observation's ``[G, A, *shape]`` arrays."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema
from fivectl.sim import state as ST
from fivectl.sim.observe.kernel import encode_all
from fivectl.sim.observe.registry import G_NC, G_NF, G_SH, G_SW
from fivectl.sim.observe.tables import EncoderTables, ObsBuffers, compile_schema

EncoderScratch = namedtuple(
    "EncoderScratch",
    (
        "vuln",  # bool [U]: C.vulnerable of every unit of the current game
        "cand_u",  # int64 [2, n_groups, U]: per team and unit group, the observed units ...
        "cand_fog",  # bool: ... whether shown at their last seen state ...
        "cand_x",  # float64: ... and where
        "cand_y",
        "cand_n",  # int64 [2, n_groups]: how many
        "frows",  # float32 [2, n_groups, U, max float columns]: their team-level feature rows
        "crows",  # int32 [2, n_groups, U, max categorical columns]
        "sel",  # int64 [SCRATCH_MAX_COUNT]: one hero's closest candidates
        "sel_d",  # float64 [SCRATCH_MAX_COUNT]: their squared distance, unit, fog flag and offset from the hero
        "sel_u",
        "sel_fog",
        "sel_dx",
        "sel_dy",
        "cell_x",  # int64 [grid width]: terrain cell index of each grid column (-1 outside the map)
        "cell_y",  # int64 [grid height]: same for each grid row
        "t_slot",  # int64 [n_targets]: target slots a hero may target, and per slot what the rules check
        "t_attack",
        "t_spell",
        "t_ally",
        "t_d2",
    ),
)


def alloc_scratch(tables: EncoderTables, n_units: int) -> EncoderScratch:
    groups = tables.groups
    ng = max(len(groups), 1)
    max_nf = max([1, *groups[:, G_NF]])
    max_nc = max([1, *groups[:, G_NC]])
    max_sw = max([1, *groups[:, G_SW]])
    max_sh = max([1, *groups[:, G_SH]])
    nt = max(tables.n_targets, 1)
    return EncoderScratch(
        vuln=np.zeros(n_units, np.bool_),
        cand_u=np.zeros((2, ng, n_units), np.int64),
        cand_fog=np.zeros((2, ng, n_units), np.bool_),
        cand_x=np.zeros((2, ng, n_units), np.float64),
        cand_y=np.zeros((2, ng, n_units), np.float64),
        cand_n=np.zeros((2, ng), np.int64),
        frows=np.zeros((2, ng, n_units, max_nf), np.float32),
        crows=np.zeros((2, ng, n_units, max_nc), np.int32),
        sel=np.zeros(ST.SCRATCH_MAX_COUNT, np.int64),
        sel_d=np.zeros(ST.SCRATCH_MAX_COUNT, np.float64),
        sel_u=np.zeros(ST.SCRATCH_MAX_COUNT, np.int64),
        sel_fog=np.zeros(ST.SCRATCH_MAX_COUNT, np.bool_),
        sel_dx=np.zeros(ST.SCRATCH_MAX_COUNT, np.float64),
        sel_dy=np.zeros(ST.SCRATCH_MAX_COUNT, np.float64),
        cell_x=np.zeros(max_sw, np.int64),
        cell_y=np.zeros(max_sh, np.int64),
        t_slot=np.zeros(nt, np.int64),
        t_attack=np.zeros(nt, np.bool_),
        t_spell=np.zeros(nt, np.bool_),
        t_ally=np.zeros(nt, np.bool_),
        t_d2=np.zeros(nt, np.float64),
    )


MASK_KEYS = ("action_mask", "target_mask", "param_mask")
"""What ``Encoder.encode(..., masks_only=True)`` returns."""


class Encoder:
    """Encodes a batched game state for one schema version (arrays per ``schema.array_specs()``)."""

    def __init__(self, schema: ObsSchema, act_kind: np.ndarray, act_slot: np.ndarray):
        self.schema = schema
        self.compiled = compile_schema(schema, act_kind, act_slot)
        specs = schema.array_specs()
        missing = set(specs) ^ set(self.compiled.blocks)
        if missing:  # the compiled layout must be exactly the schema's array list
            raise BadInput(f"schema v{schema.version}: encoder layout disagrees on {sorted(missing)}")
        self._scratch: EncoderScratch | None = None
        self.n_targets = schema.n_targets
        self._blocks = [
            (key, buf, off, math.prod(shape), shape)
            for key, (buf, off, shape) in self.compiled.blocks.items()
        ]

    def _scratch_for(self, n_units: int) -> EncoderScratch:
        if self._scratch is None or self._scratch.vuln.shape[0] != n_units:
            self._scratch = alloc_scratch(self.compiled.tables, n_units)
        return self._scratch

    def encode(self, S, L, P, masks_only: bool = False) -> dict[str, np.ndarray]:
        """Every array of the schema, ``[G, A, ...]``; with ``masks_only`` the action masks alone
        (``MASK_KEYS``): a third of the work, for a step whose observation only scripted bots and the game's
        validation of the next actions read (a held step of ``model.decide_every``)."""
        c = self.compiled
        if S.slot_unit.shape[2] < self.n_targets or S.slot_unit.shape[1] != L.n_heroes:
            raise BadInput(
                f"encoder for schema v{self.schema.version}: the state was built for another schema"
            )
        G = S.rng.shape[0]
        A = L.n_heroes
        bufs = ObsBuffers(
            f=np.zeros(G * A * c.n_float, np.float32),
            i=np.zeros(max(G * A * c.n_int, 1), np.int32),
            b=np.zeros(G * A * c.n_bool, np.bool_),
        )
        encode_all(S, L, P, c.tables, bufs, self._scratch_for(L.n_units), masks_only)
        by_name = {"float": bufs.f, "int": bufs.i, "bool": bufs.b}
        GA = G * A
        return {
            key: by_name[buf][off * GA : (off + n) * GA].reshape(G, A, *shape)
            for key, buf, off, n, shape in self._blocks
            if not masks_only or key in MASK_KEYS
        }
