"""Observation processing (paper H, Figure 7; HoK Figure 2): every schema group becomes one fixed-width vector.

Per group: float columns are standardized by a running mean/std (``RunningMeanStd``, clipped to +-clip, paper C),
each categorical field is embedded and its embeddings are concatenated after the float columns; then

- ``vector`` groups go through one linear layer + ReLU;
- ``unitset`` groups go through a shared two-layer MLP per unit ("Process Set") and are max-pooled over the
  observed slots; the per-unit outputs are kept as the unit embeddings used for targeting;
- ``grid`` groups go through a two-layer 3x3 conv net and are flattened.

Parameter names are stable and derived from the schema: ``embeds.<group>.<field>``, ``vector.<group>``,
``unitsets.<group>.{0,2}``, ``grids.<group>.{0,2}``, normalizer buffers ``norms.<group>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from fivectl.config.model import ModelConfig
from fivectl.errors import BadInput
from fivectl.model.embedding import stacked_lookup
from fivectl.model.grid import grid_block
from fivectl.model.kernels.grid import band_layers
from fivectl.model.normalize import RunningMeanStd
from fivectl.model.pooling import unit_max_pool
from fivectl.model.unit_mlp import unit_mlp
from fivectl.schema.spec import Group, ObsSchema

Obs = dict[str, torch.Tensor]


@dataclass
class UnitEmbeddings:
    """A unit set's per-unit embeddings, kept for the observed slots only: ``packed`` [R, E] at slot ``rows``
    of the flattened [N * count] (sample ``samples = rows // count``). In the quickstart a third of the creep
    slots hold a creep, so the max-pool and target attention read a third of what [N, count, E] would hold;
    ``dense()`` builds that tensor (zeros on empty slots) for whoever wants it."""

    packed: torch.Tensor
    rows: torch.Tensor
    samples: torch.Tensor
    n: int
    count: int

    def dense(self) -> torch.Tensor:
        """[N, count, E], exactly 0 on empty slots."""
        out = self.packed.new_zeros(self.n * self.count, self.packed.shape[-1])
        return out.index_copy(0, self.rows, self.packed).view(self.n, self.count, -1)

    def pooled(self) -> torch.Tensor:
        """[N, E]: the max over each sample's observed units, 0 for an empty set (the MLP ends in a ReLU, so
        every value is >= 0: the max over every slot, zeros included, is the same number). Its gradient goes to
        the arg-max units (split between equal ones)."""
        return unit_max_pool(self.packed, self.samples, self.n)


def n_convolutions(block: nn.Sequential) -> int:
    return sum(isinstance(m, nn.Conv2d) for m in block)


class ByName(nn.Module):
    """Submodules keyed by schema names, stored as ``<container>.<name>`` in the ``state_dict``.

    Unlike ``nn.ModuleDict`` it accepts any name without a dot, including ones that are also method names
    (a group may well be called ``items``): entries live only in ``_modules`` and are reached with ``[name]``.
    """

    def __setitem__(self, name: str, module: nn.Module) -> None:
        if not name or "." in name:
            raise BadInput(f"{name!r} cannot name a layer: names must be non-empty and contain no '.'")
        self._modules[name] = module

    def __getitem__(self, name: str) -> nn.Module:
        return self._modules[name]

    def __contains__(self, name: str) -> bool:
        return name in self._modules


def normalize_mask(group: Group) -> torch.Tensor:
    """True on the ``g.float`` columns of float fields with ``norm = "running"`` (bools and ``none`` pass)."""
    mask = torch.zeros(group.n_float, dtype=torch.bool)
    for f in group.float_fields:
        if f.kind == "float" and f.norm == "running":
            mask[group.float_columns()[f.name]] = True
    return mask


def stacked_offsets(group: Group) -> torch.Tensor:
    """Each categorical column's first row in the group's fields' embedding tables stacked in field order."""
    starts = torch.tensor([0, *(f.vocab for f in group.cat_fields[:-1])], device="cpu").cumsum(0)
    return starts.repeat_interleave(torch.tensor([f.width for f in group.cat_fields], device="cpu"))


def group_input_width(group: Group, cfg: ModelConfig) -> int:
    """Width of the per-item input of a group's first layer: float columns then categorical embeddings."""
    return group.n_float + group.n_cat * cfg.cat_embed


def group_output_width(group: Group, cfg: ModelConfig) -> int:
    """Width a group contributes to the flattened observation (the input of the FC layer)."""
    if group.kind == "grid":
        return cfg.grid_channels * group.size[0] * group.size[1]
    return cfg.unit_embed


class ObsEncoder(nn.Module):
    """Schema-driven encoder: ``forward(obs [N, ...]) -> (flat [N, out_width], unit embeddings)``.

    The unit embeddings are one ``UnitEmbeddings`` ([N, count, E] and packed) per targetable unitset, in schema
    order (together: the target slots of ``target_mask``).
    """

    def __init__(self, schema: ObsSchema, cfg: ModelConfig, obs_clip: float = 5.0):
        super().__init__()
        self.schema = schema
        self.cfg = cfg
        self.norms = ByName()
        self.embeds = ByName()
        self.vector = ByName()
        self.unitsets = ByName()
        self.grids = ByName()
        self.output_slices: dict[str, slice] = {}
        self._stacked_cache: dict[str, tuple] = {}
        self._offsets: dict[str, torch.Tensor] = {}  # each group's categorical columns' rows in its stacked table
        self._pinned_tables: dict[str, torch.Tensor] = {}
        self._band_cache: dict[str, tuple] = {}
        self._pinned_bands: dict[str, list[torch.Tensor]] = {}
        self._acting_sources: list[torch.Tensor] | None = None
        self._acting_cache: tuple[tuple, list[torch.Tensor]] | None = None
        start = 0
        for g in schema.groups:
            if g.n_float:
                self.norms[g.name] = RunningMeanStd(g.n_float, normalize_mask(g), clip=obs_clip)
            if g.cat_fields:
                self.embeds[g.name] = ByName()
                for f in g.cat_fields:
                    self.embeds[g.name][f.name] = nn.Embedding(f.vocab, cfg.cat_embed)
                self._offsets[g.name] = stacked_offsets(g)
            self._build_group(g)
            width = group_output_width(g, cfg)
            self.output_slices[g.name] = slice(start, start + width)
            start += width
        self.out_width = start
        self.target_groups = tuple(g.name for g in schema.target_groups)

    def _build_group(self, g: Group) -> None:
        cfg = self.cfg
        in_width = group_input_width(g, cfg)
        if in_width == 0:
            raise BadInput(f"schema v{self.schema.version}: group {g.name!r} has no fields")
        if g.kind == "vector":
            self.vector[g.name] = nn.Sequential(nn.Linear(in_width, cfg.unit_embed), nn.ReLU())
            return
        if g.kind == "unitset":
            self.unitsets[g.name] = nn.Sequential(
                nn.Linear(in_width, cfg.unit_hidden),
                nn.ReLU(),
                nn.Linear(cfg.unit_hidden, cfg.unit_embed),
                nn.ReLU(),
            )
            return
        h, w = g.size
        if h < 1 or w < 1:
            raise BadInput(f"schema v{self.schema.version}: grid group {g.name!r} needs size = [H, W] >= 1")
        c = cfg.grid_channels
        self.grids[g.name] = nn.Sequential(
            nn.Conv2d(in_width, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1), nn.ReLU()
        )

    def group_input(self, g: Group, obs: Obs) -> torch.Tensor:
        """Normalized float columns followed by the categorical embeddings: ``[N, *item, in_width]``."""
        parts = []
        if g.n_float:
            parts.append(self.norms[g.name](obs[f"{g.name}.float"]))
        if g.cat_fields:
            parts.extend(self.embedded(g, obs[f"{g.name}.cat"]))
        return torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]

    def embedded(self, g: Group, cats: torch.Tensor) -> list[torch.Tensor]:
        """The embeddings of a group's categorical columns, field after field: one part ``[..., width * E]``
        (``embedding.stacked_lookup`` in the fields' tables stacked together)."""
        return [stacked_lookup(cats, *self.stacked_embeddings(g))]

    def stacked_embeddings(self, g: Group) -> tuple[torch.Tensor, torch.Tensor]:
        """(every field's table stacked [sum of vocabs, E], each categorical column's row offset in it).

        With a gradient (training) the tables are stacked on every call, so the gradient flows to them. Without
        one (acting) the stack is kept until a table changes (keyed like the normalizer's cache: version
        counters and storage). While ``torch.jit.trace`` records a graph it is that graph's input (``pinned``).
        """
        offsets = self._offsets[g.name]
        if g.name in self._pinned_tables:
            return self._pinned_tables[g.name], offsets
        weights = [self.embeds[g.name][f.name].weight for f in g.cat_fields]
        if offsets.device != weights[0].device:
            offsets = self._offsets[g.name] = offsets.to(weights[0].device)
        if torch.is_grad_enabled():
            return torch.cat(weights), offsets
        key = tuple((w._version, w.data_ptr(), w.shape[0]) for w in weights)
        cached = self._stacked_cache.get(g.name)
        if cached is None or cached[0] != key:
            cached = (key, torch.cat([w.detach() for w in weights]))
            self._stacked_cache[g.name] = cached
        return cached[1], offsets

    def grid_bands(self, g: Group) -> list[torch.Tensor]:
        """A grid group's convolutions as band matrices and row biases (``kernels/grid.py``), for acting: kept until
        a kernel changes (version counters and storage, like ``stacked_embeddings``), or the traced graph's input
        (``pinned``)."""
        if g.name in self._pinned_bands:
            return self._pinned_bands[g.name]
        block = self.grids[g.name]
        key = tuple((p._version, p.data_ptr()) for p in block.parameters())
        cached = self._band_cache.get(g.name)
        if cached is None or cached[0] != key:
            with torch.no_grad():
                cached = (key, band_layers(block, g.size[1]))
            self._band_cache[g.name] = cached
        return cached[1]

    def acting_constants(self, dtype: torch.dtype) -> list[torch.Tensor]:
        """What acting derives from the parameters and statistics and caches until they change: each
        normalizer's (shift, scale, low, high), then each group's stacked embedding table, then each grid
        group's band matrices and row biases, in schema order. A
        traced graph takes them as inputs (``pinned``) instead of deriving them again on every call.

        A worker asks on every step: the list is kept until a source tensor is written in place (its version
        counter) or replaced (``_apply`` drops it); walking every group again cost as much as the graph saved."""
        if self._acting_sources is None:
            self._acting_sources = [
                *(t for g in self.schema.groups if g.n_float for t in self.norms[g.name].buffers()),
                *(self.embeds[g.name][f.name].weight for g in self.schema.groups for f in g.cat_fields),
                *(p for g in self.schema.groups if g.kind == "grid" for p in self.grids[g.name].parameters()),
            ]
        key = (dtype, *(t._version for t in self._acting_sources))
        if self._acting_cache is None or self._acting_cache[0] != key:
            constants: list[torch.Tensor] = []
            with torch.no_grad():
                for g in self.schema.groups:
                    if g.n_float:
                        constants.extend(self.norms[g.name].standardizer(dtype))
                    if g.cat_fields:
                        constants.append(self.stacked_embeddings(g)[0])
                    if g.kind == "grid":
                        constants.extend(self.grid_bands(g))
            self._acting_cache = (key, constants)
        return self._acting_cache[1]

    def _apply(self, fn, recurse=True):
        self._acting_sources = self._acting_cache = None  # moved or converted: other tensors
        return super()._apply(fn, recurse)

    @contextmanager
    def pinned(self, constants: Sequence[torch.Tensor]):
        """Use ``constants`` (laid out as ``acting_constants``) instead of deriving them, inside the block."""
        rest = iter(constants)
        try:
            for g in self.schema.groups:
                if g.n_float:
                    self.norms[g.name].pinned = tuple(next(rest) for _ in range(4))
                if g.cat_fields:
                    self._pinned_tables[g.name] = next(rest)
                if g.kind == "grid":
                    self._pinned_bands[g.name] = [next(rest) for _ in range(2 * n_convolutions(self.grids[g.name]))]
            yield
        finally:
            for g in self.schema.groups:
                if g.n_float:
                    self.norms[g.name].pinned = None
            self._pinned_tables.clear()
            self._pinned_bands.clear()

    def observed_units(self, g: Group, obs: Obs) -> UnitEmbeddings:
        """The shared unit MLP of a ``unitset`` group, on the observed slots alone (``unit_mlp.unit_mlp``).

        Only the observed slots go through normalization, embeddings and the MLP: in the 1v1 quickstart fewer
        than half of the 56 unit slots hold a unit, and this is where most of the network's work is. The result
        (and its gradient) equals running every slot and multiplying by the mask.
        """
        mask = obs[f"{g.name}.mask"]
        n, count = mask.shape[0], mask.shape[1]
        rows = mask.reshape(-1).nonzero().squeeze(1)  # observed slots of the [N * count] flattened set
        samples = torch.div(rows, count, rounding_mode="floor")
        floats = cats = standardizer = table = offsets = None
        if g.n_float:
            floats = obs[f"{g.name}.float"].reshape(n * count, -1)
            standardizer = self.norms[g.name].standardizer(floats.dtype)
        if g.cat_fields:
            cats = obs[f"{g.name}.cat"].reshape(n * count, -1)
            table, offsets = self.stacked_embeddings(g)
        observed = unit_mlp(self.unitsets[g.name], rows, floats, cats, standardizer, table, offsets)
        return UnitEmbeddings(observed, rows, samples, n, count)

    def grid_features(self, g: Group, obs: Obs) -> torch.Tensor:
        """A grid group's block (``grid.grid_block``): [N, C * H * W]. A group of float columns alone hands the
        block its observation and normalizer constants (its kernel standardizes as it reads); acting hands it
        the cached band matrices (``grid_bands``)."""
        bands = None if torch.is_grad_enabled() else self.grid_bands(g)
        if g.n_float and not g.cat_fields:
            floats = obs[f"{g.name}.float"]
            standardizer = self.norms[g.name].standardizer(floats.dtype)
            return grid_block(self.grids[g.name], floats, standardizer, bands)
        return grid_block(self.grids[g.name], self.group_input(g, obs), bands=bands)

    def forward(self, obs: Obs) -> tuple[torch.Tensor, list[UnitEmbeddings]]:
        pooled: list[torch.Tensor] = []
        unit_embeddings: dict[str, UnitEmbeddings] = {}
        for g in self.schema.groups:
            if g.kind == "unitset":
                units = self.observed_units(g, obs)
                pooled.append(units.pooled())
                unit_embeddings[g.name] = units
            elif g.kind == "vector":
                pooled.append(self.vector[g.name](self.group_input(g, obs)))
            else:
                pooled.append(self.grid_features(g, obs))
        flat = torch.cat(pooled, dim=-1)
        return flat, [unit_embeddings[n] for n in self.target_groups]

    @torch.no_grad()
    def update_normalizers(self, obs: Obs) -> None:
        """Fold a batch into the running statistics; unit sets count only their observed slots."""
        for g in self.schema.groups:
            if not g.n_float:
                continue
            keep = obs[f"{g.name}.mask"] if g.kind == "unitset" else None
            self.norms[g.name].update(obs[f"{g.name}.float"], keep)

