"""A schema compiled into the small integer tables the kernel walks (``compile_schema``), checked against the
registries of ``registry.py``."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema
from fivectl.sim import state as ST
from fivectl.sim.observe.registry import (
    FEAT_CONST,
    GROUP_SOURCES,
    N_GCOLS,
    OBSERVER_CODES,
    SOURCE_FEATURES,
    SRC_GLOBAL,
    SRC_PREV,
    SRC_SELF,
    SRC_TERRAIN,
    UNIT_SOURCES,
)

# What the kernel reads besides the game state: the compiled schema and the game's action table. One namedtuple
# argument, so that a new table (a schema v3 group source, say) is one more member here and in ``compile_schema``
# rather than one more parameter of every kernel function; member access costs nothing in compiled code.
EncoderTables = namedtuple(
    "EncoderTables",
    (
        "groups",  # int64 [n_groups, N_GCOLS]: the group table (columns G_*)
        "fcode",  # int32 [n float columns over all groups]: feature code of each column (FEAT_CONST: retired)
        "fsub",  # int32: element of the feature (fields of width k have columns 0..k-1)
        "fconst",  # float32: the constant fed to a retired column
        "ccode",  # int32 [n categorical columns]: same for categorical columns
        "csub",
        "cconst",  # int32
        "fobs",  # int32: group-relative float columns computed per observer (unit groups and self)
        "cobs",  # int32: same for categorical columns
        "act_kind",  # int64 [n_primary]: the game's action kind and slot of each primary action
        "act_slot",
        "n_targets",  # target slots per hero
        "amask_off",  # per-agent offsets of action_mask / target_mask / param_mask in the bool buffer
        "tmask_off",
        "pmask_off",
    ),
)
# The three flat output buffers (float32, int32, bool); every key's block is contiguous in one of them.
ObsBuffers = namedtuple("ObsBuffers", ("f", "i", "b"))


@dataclass
class CompiledSchema:
    """The kernel's tables for a schema, plus the key -> buffer-block map."""

    tables: EncoderTables
    blocks: dict  # key -> (buffer name, offset per agent, per-agent shape)
    n_float: int  # per-agent sizes of the three buffers
    n_int: int
    n_bool: int


def compile_schema(schema: ObsSchema, act_kind: np.ndarray, act_slot: np.ndarray) -> CompiledSchema:
    """Check every group/field against the registries and build the kernel tables (BadInput if unknown).
    ``act_kind``/``act_slot``: the game's kind and slot of each of the schema's primary actions."""
    if len(act_kind) != schema.action.n_primary or len(act_slot) != schema.action.n_primary:
        raise BadInput(
            f"schema v{schema.version}: the action table has {len(act_kind)} kinds and {len(act_slot)} slots "
            f"for {schema.action.n_primary} primary actions"
        )
    rows, fcode, fsub, fconst, ccode, csub, cconst = [], [], [], [], [], [], []
    fobs, cobs = [], []
    blocks = {}
    nf = ni = nb = 0
    t_offsets = schema.target_offsets()
    for g in schema.groups:
        if g.name not in GROUP_SOURCES:
            raise BadInput(
                f"schema v{schema.version}: group {g.name!r} has no encoder source "
                f"(known: {', '.join(GROUP_SOURCES)})"
            )
        src = GROUP_SOURCES[g.name]
        registry = SOURCE_FEATURES[src]
        expect_kind = {
            SRC_GLOBAL: "vector",
            SRC_SELF: "vector",
            SRC_PREV: "vector",
            SRC_TERRAIN: "grid",
        }.get(src, "unitset")
        if g.kind != expect_kind:
            raise BadInput(
                f"schema v{schema.version}: group {g.name!r} must be a {expect_kind}, not {g.kind}"
            )
        if g.kind == "unitset" and not 1 <= g.count <= ST.SCRATCH_MAX_COUNT:
            raise BadInput(
                f"schema v{schema.version}: group {g.name!r} count must be 1..{ST.SCRATCH_MAX_COUNT}"
            )
        if g.targetable and src not in UNIT_SOURCES:
            raise BadInput(f"schema v{schema.version}: group {g.name!r} cannot be targetable")
        fcol0, ccol0 = len(fcode), len(ccode)
        fobs0, cobs0 = len(fobs), len(cobs)
        for f in g.fields:
            if f.retired:
                for j in range(f.width):
                    if f.is_float:
                        fcode.append(FEAT_CONST)
                        fsub.append(j)
                        fconst.append(f.constant)
                    else:
                        ccode.append(FEAT_CONST)
                        csub.append(j)
                        cconst.append(int(f.constant))
                continue
            if f.name not in registry:
                raise BadInput(
                    f"schema v{schema.version}: field {g.name}.{f.name} has no encoder feature "
                    f"(known for {g.name}: {', '.join(registry)})"
                )
            code, width, kind = registry[f.name]
            if f.width != width:
                raise BadInput(
                    f"schema v{schema.version}: field {g.name}.{f.name} has width {f.width}, "
                    f"the encoder computes {width}"
                )
            if (kind == "categorical") != (f.kind == "categorical"):
                raise BadInput(f"schema v{schema.version}: field {g.name}.{f.name} must be {kind}")
            if src in (SRC_SELF, *UNIT_SOURCES) and code in OBSERVER_CODES:
                if f.is_float:
                    fobs.extend(len(fcode) - fcol0 + j for j in range(width))
                else:
                    cobs.extend(len(ccode) - ccol0 + j for j in range(width))
            for j in range(width):
                if f.is_float:
                    fcode.append(code)
                    fsub.append(j)
                    fconst.append(0.0)
                else:
                    ccode.append(code)
                    csub.append(j)
                    cconst.append(0)
        lead = g.item_shape()
        n_items = int(np.prod(lead)) if lead else 1
        foff, coff, moff = nf, ni, nb
        blocks[f"{g.name}.float"] = ("float", nf, (*lead, g.n_float))
        nf += n_items * g.n_float
        if g.n_cat:
            blocks[f"{g.name}.cat"] = ("int", ni, (*lead, g.n_cat))
            ni += n_items * g.n_cat
        if g.kind == "unitset":
            blocks[f"{g.name}.mask"] = ("bool", nb, (g.count,))
            nb += g.count
        sh, sw = g.size if g.kind == "grid" else (0, 0)
        rows.append(
            [
                src,
                g.count if g.kind == "unitset" else 1,
                g.n_float,
                g.n_cat,
                foff,
                coff,
                moff,
                t_offsets.get(g.name, -1),
                fcol0,
                ccol0,
                sh,
                sw,
                fobs0,
                len(fobs) - fobs0,
                cobs0,
                len(cobs) - cobs0,
            ]
        )
    P, T = schema.action.n_primary, schema.n_targets
    amask_off = nb
    blocks["action_mask"] = ("bool", nb, (P,))
    nb += P
    tmask_off = nb
    blocks["target_mask"] = ("bool", nb, (P, T))
    nb += P * T
    pmask_off = nb
    blocks["param_mask"] = ("bool", nb, (P, 2))
    nb += P * 2
    tables = EncoderTables(
        groups=np.array(rows, dtype=np.int64).reshape(-1, N_GCOLS),
        fcode=np.array(fcode, np.int32),
        fsub=np.array(fsub, np.int32),
        fconst=np.array(fconst, np.float32),
        ccode=np.array(ccode, np.int32),
        csub=np.array(csub, np.int32),
        cconst=np.array(cconst, np.int32),
        fobs=np.array(fobs, np.int32),
        cobs=np.array(cobs, np.int32),
        act_kind=np.ascontiguousarray(act_kind, dtype=np.int64),
        act_slot=np.ascontiguousarray(act_slot, dtype=np.int64),
        n_targets=int(T),
        amask_off=amask_off,
        tmask_off=tmask_off,
        pmask_off=pmask_off,
    )
    return CompiledSchema(tables=tables, blocks=blocks, n_float=nf, n_int=ni, n_bool=nb)
