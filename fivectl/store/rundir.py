"""The run directory: one folder per experiment, the single place its layout is defined.

```
RUN/
  run.json            metadata: fivectl version, created, recipe name, schema version, lineage
  recipe.toml         the resolved recipe the run was started with (later edits go through surgery/anneal)
  checkpoints.zarr/   Zarr v3 store, one group per parameter version + LATEST pointer
  rollouts/           Arrow IPC rollout fragments
  replays/            Arrow IPC game replays
  metrics/            Arrow IPC metrics, one row per learner iteration
  league/             TrueSkill ratings and game results
  logs/               text logs and TensorBoard events
```
"""

from __future__ import annotations

import datetime as _dt
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from fivectl import __version__
from fivectl.config import Recipe, recipe_from_dict
from fivectl.errors import BadInput
from fivectl.schema.spec import ObsSchema, load_schema
from fivectl.store.atomic import write_json_atomic, write_text_atomic

RUN_FILE = "run.json"
RECIPE_FILE = "recipe.toml"
# `train --init-from`: the run.json key of the source a new run's network starts from, and its lineage event
INIT_FROM = "init_from"
SUBDIRS = ("checkpoints.zarr", "rollouts", "replays", "metrics", "league", "logs")


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@dataclass
class RunDir:
    path: Path
    meta: dict[str, Any]

    # -- layout -------------------------------------------------------------------------------------
    @property
    def checkpoints_path(self) -> Path:
        return self.path / "checkpoints.zarr"

    @property
    def rollouts_path(self) -> Path:
        return self.path / "rollouts"

    @property
    def replays_path(self) -> Path:
        return self.path / "replays"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics"

    @property
    def league_path(self) -> Path:
        return self.path / "league"

    @property
    def logs_path(self) -> Path:
        return self.path / "logs"

    @property
    def recipe_path(self) -> Path:
        return self.path / RECIPE_FILE

    @property
    def first_stage_path(self) -> Path:
        """Where the recipe's first stage (``[curriculum]``) trains: an ordinary run inside this one."""
        return self.path / "first_stage"

    # -- creation and opening -----------------------------------------------------------------------
    @classmethod
    def create(
        cls, path: str | Path, recipe: Recipe, recipe_source: str = "", extra: dict[str, Any] | None = None
    ) -> RunDir:
        """Create a new run directory (``extra``: more ``run.json`` keys). Refuses a folder that already holds a
        run."""
        path = Path(path)
        if (path / RUN_FILE).exists():
            raise BadInput(f"{path}: already holds a run (use --resume to continue it)")
        if path.exists() and not path.is_dir():
            raise BadInput(f"{path}: exists and is not a directory")
        path.mkdir(parents=True, exist_ok=True)
        for sub in SUBDIRS:
            (path / sub).mkdir(exist_ok=True)
        write_text_atomic(path / RECIPE_FILE, tomli_w.dumps(recipe.to_dict()))
        meta = {
            "format": 1,
            "fivectl_version": __version__,
            "created": now_iso(),
            "name": recipe.name,
            "recipe_source": recipe_source,
            "schema_version": recipe.model.schema_version,
            "lineage": [],
            **(extra or {}),
        }
        # run.json last: a folder without it is not yet a run, so a crash mid-create leaves nothing half-made.
        write_json_atomic(path / RUN_FILE, meta)
        return cls(path, meta)

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        path = Path(path)
        if not path.exists():
            raise BadInput(f"{path}: no such run directory")
        run_file = path / RUN_FILE
        if not run_file.exists():
            raise BadInput(f"{path}: not a fivectl run (no {RUN_FILE})")
        try:
            meta = json.loads(run_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadInput(f"{run_file}: unreadable run metadata: {e}") from None
        if not isinstance(meta, dict):
            raise BadInput(f"{run_file}: run metadata must be a JSON object")
        for sub in SUBDIRS:
            (path / sub).mkdir(exist_ok=True)
        return cls(path, meta)

    @staticmethod
    def is_run(path: str | Path) -> bool:
        return (Path(path) / RUN_FILE).is_file()

    # -- contents -----------------------------------------------------------------------------------
    def load_recipe(self, overrides: list[str] | None = None) -> Recipe:
        try:
            data = tomllib.loads(self.recipe_path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise BadInput(f"{self.recipe_path}: unreadable recipe: {e}") from None
        return recipe_from_dict(data, source=str(self.recipe_path), overrides=overrides)

    def save_recipe(self, recipe: Recipe) -> None:
        write_text_atomic(self.recipe_path, tomli_w.dumps(recipe.to_dict()))

    def update_meta(self, **changes: Any) -> None:
        self.meta.update(changes)
        write_json_atomic(self.path / RUN_FILE, self.meta)

    def obs_schema(self, version: int) -> ObsSchema:
        """The observation schema the run reads: the one a surgery recorded in ``run.json`` (it may retire a field
        or come from a file) when it has this version, else ``schemas/obs/v{version}.toml``."""
        recorded = self.meta.get("schema")
        if isinstance(recorded, dict) and recorded.get("version") == version:
            return ObsSchema.from_json(json.dumps(recorded))
        return load_schema(version)

    def add_lineage(self, event: dict[str, Any]) -> None:
        """Record how a version came to be (surgery, anneal, ...): appended, never rewritten."""
        entry = {"time": now_iso(), **event}
        self.update_meta(lineage=[*self.meta.get("lineage", []), entry])


def find_runs(root: str | Path) -> list[RunDir]:
    """Runs directly in ``root`` or one level below it (``runs/NAME`` and ``runs/GROUP/NAME``)."""
    root = Path(root)
    if not root.exists():
        raise BadInput(f"{root}: no such directory")
    if not root.is_dir():
        raise BadInput(f"{root}: not a directory")
    found = []
    candidates = [root] + sorted(p for p in root.iterdir() if p.is_dir())
    for p in candidates:
        if RunDir.is_run(p):
            found.append(p)
        elif p != root:
            found.extend(sorted(q for q in p.iterdir() if q.is_dir() and RunDir.is_run(q)))
    runs = []
    for p in found:
        try:
            runs.append(RunDir.open(p))
        except BadInput:
            continue
    return runs
