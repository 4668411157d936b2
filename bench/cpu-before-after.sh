#!/usr/bin/env bash
# The CPU backend's kernels against its portable reference kernels, on this machine, side by side:
# xhal-bench (bf16 every op; f32 attention, paged_attention and linear) and llama_block, "before"
# with XHAL_FORCE_REFERENCE naming every op that has a SIMD or BLAS kernel, "after" without, the
# two alternated ROUNDS times (default 2). Prints one table: medians per run, the speed-up, the
# fraction of the ceiling measured beside each call, and llama_block's measured speed-up against
# the one its per-op times and the benchmarks' speed-ups predict.
# Usage: bench/cpu-before-after.sh [BIN_DIR (default build/bin)] [ROUNDS]; raw JSON under $OUT
# (default ./cpu-before-after-out).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin}
rounds=${2:-2}
out=${OUT:-cpu-before-after-out}
mkdir -p "$out"
reference=attention,attention_varlen,paged_attention,rms_norm,fused_add_rms_norm,swiglu,swiglu_packed,rope,linear
"$bin/xhal-info" 2>&1 | grep -E "^  cpu |version: xhal cpu" | tee "$out/info.txt" || true

bench() {  # mode dtype filter round; XHAL_FORCE_REFERENCE set by the caller
  "$bin/xhal-bench" --device cpu --dtype "$2" --benchmark_filter="$3" \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/bench-$1-$2-$4.json" --benchmark_out_format=json >"$out/bench-$1-$2-$4.txt" 2>&1
}
for round in $(seq "$rounds"); do
  for mode in before after; do
    echo "round $round: $mode"
    export XHAL_FORCE_REFERENCE=""
    [ "$mode" = before ] && XHAL_FORCE_REFERENCE=$reference
    bench "$mode" bf16 '^(rms|fused|swiglu|rope|attention|paged|linear)' "$round"
    bench "$mode" f32 '^(attention/|paged|linear)' "$round"
    "$bin/llama_block" --hidden 2048 --tokens 512 --decode 8 >"$out/llama-$mode-$round.txt" 2>&1
  done
done

python3 - "$out" "$rounds" <<'EOF'
import json, os, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def complete(path):  # a run cut short leaves no file or an unfinished one: left out
    try:
        return json.load(open(path))["benchmarks"]
    except (OSError, ValueError, KeyError):
        return None
def medians(mode, dtype):
    runs = []
    for r in range(1, rounds + 1):
        rows = {}
        benchmarks = complete(f"{out}/bench-{mode}-{dtype}-{r}.json")
        if benchmarks is None:
            continue
        for b in benchmarks:
            if b.get("aggregate_name") != "median" or b["run_name"].startswith("ceiling"):
                continue
            frac = b.get("frac_copy", b.get("frac_gemm"))
            rows[b["run_name"].replace("/real_time", "")] = (b["real_time"], frac, "frac_copy" in b)
        runs.append(rows)
    return runs
def fmt_list(xs, f):
    return ", ".join(f(x) for x in xs)
print(f"\n| op | before ms | after ms | speed-up | after fraction of ceiling |")
print("|---|---|---|---|---|")
speedup = {}
for dtype in ("bf16", "f32"):
    before, after = medians("before", dtype), medians("after", dtype)
    names = list(dict.fromkeys(name for run in after for name in run))  # every run's, in order
    for name in names:
        b = [r[name][0] for r in before if name in r]
        a = [r[name][0] for r in after if name in r]
        if not b or not a:
            continue
        s = statistics.median(b) / statistics.median(a)
        speedup[name] = s
        kind = "copy" if next(r[name][2] for r in after if name in r) else "gemm"
        print(f"| {name} | {fmt_list(b, lambda x: f'{x:.3g}')} | {fmt_list(a, lambda x: f'{x:.3g}')} | "
              f"{s:.1f}x | {fmt_list([r[name][1] for r in after if name in r], lambda x: f'{x:.2f}')} of {kind} |")

# llama_block: per-op times before, divided by the benchmark speed-up of the op's kind.
def llama(mode, r):
    ops, total = {}, None
    for line in open(f"{out}/llama-{mode}-{r}.txt"):
        m = re.match(r"^(\S.*?)\s{2,}(\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+%$", line)
        if m:
            ops[m.group(1)] = float(m.group(3))
        m = re.match(r"^total\s+([\d.]+)", line)
        if m:
            total = float(m.group(1))
    return ops, total
def bench_speedup(op):
    for key, pattern in (("linear", "^linear/.*/bf16"), ("decode linear", "^linear_decode/.*/bf16"), ("attention", "^attention/.*causal.*/bf16"),
                         ("paged_attention", "^paged_attention/.*/bf16"), ("fused_add_rms_norm", "^fused"),
                         ("rms_norm", "^rms_norm"), ("swiglu_packed", "^swiglu_packed"), ("rope", "^rope")):
        if op.startswith(key):
            found = [s for n, s in speedup.items() if re.search(pattern, n)]
            return found[0] if found else 1.0
    return 1.0  # ops without a faster kernel (the kv cache write)
def llama_runs(mode):
    return [llama(mode, r) for r in range(1, rounds + 1) if os.path.exists(f"{out}/llama-{mode}-{r}.txt")]
before = [run for run in llama_runs("before") if run[1] is not None]
after = [t for _, t in llama_runs("after") if t is not None]
tb = statistics.median(t for _, t in before)
predicted = statistics.median(sum(ms / bench_speedup(op) for op, ms in ops.items()) for ops, _ in before)
print(f"\nllama_block --hidden 2048 --tokens 512 --decode 8 (bf16): before {fmt_list([t for _, t in before], lambda x: f'{x:.0f}')} ms, "
      f"after {fmt_list(after, lambda x: f'{x:.0f}')} ms: {tb / statistics.median(after):.1f}x measured, "
      f"{tb / predicted:.1f}x predicted from its per-op times and the benchmarks' speed-ups")
EOF
