#!/usr/bin/env bash
# Wheels of the runtime dependencies of fivectl that a GPU machine's Python lacks, for a machine that cannot
# reach a package index: benchmarks/gpu_device.sh installs what it finds in .whl/ before the GPU check.
#
#   bash benchmarks/gpu_wheels.sh [DEST]      # DEST: .whl by default (keep it out of git)
#
# The machine it is for: CPython 3.12 on x86-64 Linux with torch, numpy, numba, pyarrow, rich, typer, matplotlib,
# pyyaml, six, packaging and typing-extensions installed. Of pyproject.toml's dependencies that leaves zarr,
# trueskill and tomli-w, and of theirs numcodecs, donfig and google-crc32c. The versions are the ones the test
# suite runs with. Binary packages are fetched for cp312 manylinux x86-64 (pure-Python ones as py3-none-any);
# trueskill is published only as source, so it is built into a wheel here (it is pure Python).
set -euo pipefail

PY=${PYTHON:-python3}
DEST=${1:-.whl}
WHEELS=(zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1 google-crc32c==1.9.0 tomli-w==1.2.0)
SOURCE_ONLY=(trueskill==0.4.5)

mkdir -p "$DEST"
rm -f "$DEST"/*.whl # one version of each: two of one package stop the whole install
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
    manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp "${platforms[@]}" -d "$DEST" "${WHEELS[@]}"
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$DEST" "${SOURCE_ONLY[@]}"
ls -l "$DEST"
du -sh "$DEST"
