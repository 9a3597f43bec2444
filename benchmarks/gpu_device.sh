#!/usr/bin/env bash
# The GPU check in one command, from the repository root, on a machine with a CUDA GPU and a python3 with torch:
# the tests marked gpu, then benchmarks/gpu.py, all within GPU_CHECK_SECONDS (570 by default).
#
#   OUT=gpu-check bash benchmarks/gpu_device.sh
#
# Logs and the JSON summary go to $OUT (a new temporary folder when unset): gpu_tests.log, warm_up.log,
# gpu_bench.log and gpu.json. Wheels in .whl/ (benchmarks/gpu_wheels.sh makes them, for a machine that cannot
# reach a package index) are installed first into /tmp/site, which goes on PYTHONPATH; the checkout itself is
# first on PYTHONPATH, so fivectl needs no install.
set -u

PY=${PYTHON:-python3}
TOTAL=${GPU_CHECK_SECONDS:-570}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
start=$SECONDS
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl || exit 1
    export PYTHONPATH=$PWD:/tmp/site
fi
echo "results in $OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$OUT/gpu.txt"

# numba compiles the game's kernels on first use, on one core, for minutes; its cache then serves every later
# process. Compile them beside the tests, which need little of the CPU.
"$PY" benchmarks/gpu.py --warm-up-only >"$OUT/warm_up.log" 2>&1 &
warm=$!
timeout -k 10 150 "$PY" -m pytest -m gpu -q -rfEs -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log"
tests=${PIPESTATUS[0]}
echo "tests: exit $tests after $((SECONDS - start)) s"
wait "$warm"
echo "$(tail -n 1 "$OUT/warm_up.log") (beside the tests); $((SECONDS - start)) s elapsed"

# What is left goes to the benchmark: its own budget a little under its timeout, so that it prints its table.
left=$((TOTAL - (SECONDS - start)))
budget=$(awk -v s="$left" 'BEGIN { printf "%.2f", (s - 25) / 60 }')
timeout -k 10 "$left" "$PY" benchmarks/gpu.py --budget-minutes "$budget" --out "$OUT/gpu.json" 2>&1 |
    tee "$OUT/gpu_bench.log"
bench=${PIPESTATUS[0]}
echo "benchmark: exit $bench; $((SECONDS - start)) s in all"
# pytest's 5 is "no test marked gpu": not a failure of the check
if [ "$tests" -ne 0 ] && [ "$tests" -ne 5 ]; then exit 1; fi
exit "$bench"
