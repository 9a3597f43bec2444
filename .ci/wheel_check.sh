#!/usr/bin/env bash
# The package as a user installs it: build the wheel from the tracked files (as a fresh clone has them), install
# it with torch into a clean venv, and from a folder outside the repository list the shipped recipes and train
# the quickstart for half a minute by name. Passes when training exits 0 and left a checkpoint that loads.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
TORCH="${TORCH:-torch==2.13.0}"
PIP_FLAGS=(-q --disable-pip-version-check)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The tracked and new (not ignored) files only: no build/ or egg-info left by an earlier build gets in.
mkdir "$work/src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi; done |
  tar --null -T - -cf -) | tar -xf - -C "$work/src"

"$PYTHON" -m venv "$work/venv"
bin="$work/venv/bin"
"$bin/pip" install "${PIP_FLAGS[@]}" "$TORCH"  # first: any other torch request would pull a CUDA build
"$bin/pip" wheel "${PIP_FLAGS[@]}" --no-deps -w "$work/dist" "$work/src"
"$bin/pip" install "${PIP_FLAGS[@]}" "$work"/dist/fivectl-*.whl

cd "$work"  # nothing of the repository here, nor on the path
"$bin/fivectl" recipe list
"$bin/fivectl" recipe list --json | "$bin/python" -c \
  'import json, sys; names = [r["name"] for r in json.load(sys.stdin)]; assert "quickstart" in names, names'
"$bin/fivectl" train quickstart --run "$work/run" --max-minutes 0.5
"$bin/python" - "$work/run" <<'PY'
import sys

import fivectl
from fivectl.store.checkpoint import CheckpointStore

assert "site-packages" in fivectl.__file__, f"fivectl imported from {fivectl.__file__}, not the wheel"
checkpoint = CheckpointStore(f"{sys.argv[1]}/checkpoints.zarr").load()
print(f"wheel check: ok (checkpoint v{checkpoint.version} of a run trained from the installed wheel)")
PY
