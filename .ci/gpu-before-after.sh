#!/usr/bin/env bash
# xhal-bench of this tree's CUDA build against an older tree's, on one GPU, alternated so that both
# see the same clocks and neighbours. Usage (on the GPU machine, after gpu-check built build-gpu):
#   .ci/gpu-before-after.sh BEFORE_SRC_DIR OUT_DIR [ROUNDS]
# BEFORE_SRC_DIR is an unpacked source tree (git archive of the older commit); it is built into
# build-gpu-before with the CMake arguments of gpu-check (XHAL_GPU_CMAKE_ARGS). GPU_BENCH_FILTER
# picks the cases (default: every op). Prints each case's median over the rounds, before and after.
set -uo pipefail
before_src=$1
out=$2
rounds=${3:-3}
filter=${GPU_BENCH_FILTER:-^(rms|fused|swiglu|rope|attention|paged|linear)}
# shellcheck disable=SC2086
if ! cmake -S "$before_src" -B build-gpu-before -G Ninja -DCMAKE_BUILD_TYPE=Release ${XHAL_GPU_CMAKE_ARGS:-} \
       >"$out/before-configure.log" 2>&1 ||
   ! cmake --build build-gpu-before -j"$(nproc)" --target xhal xhal_cuda xhal-bench >"$out/before-build.log" 2>&1; then
  echo "before/after: the older tree did not build (before-build.log)"
  tail -n 20 "$out/before-build.log"
  exit 1
fi
for round in $(seq "$rounds"); do
  for side in before after; do
    build="build-gpu"
    [ "$side" = before ] && build="build-gpu-before"
    "$build/bin/xhal-bench" --device cuda:0 --benchmark_min_time=0.2 --benchmark_filter="$filter" \
      --benchmark_out="$out/bench-$side-$round.json" --benchmark_out_format=json >/dev/null 2>&1 ||
      echo "before/after: xhal-bench ($side, round $round) failed"
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
times = {}
for side in ("before", "after"):
    for r in range(1, rounds + 1):
        try:
            data = json.load(open(f"{out}/bench-{side}-{r}.json"))
        except (OSError, ValueError):
            continue
        for b in data.get("benchmarks", []):
            times.setdefault(b["name"], {}).setdefault(side, []).append(b["real_time"])
print(f"{'case':70} {'before':>10} {'after':>10} {'change':>8}")
for name, sides in times.items():
    if "before" in sides and "after" in sides:
        b, a = statistics.median(sides["before"]), statistics.median(sides["after"])
        print(f"{name[:70]:70} {b:10.4f} {a:10.4f} {100 * (a / b - 1):+7.1f}%")
PY
