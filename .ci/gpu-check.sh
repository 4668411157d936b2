#!/usr/bin/env bash
# One iteration on the GPU machine: configure and build with CUDA for sm_90, run the test suite
# (the conformance suite on cuda included), compute-sanitizer memcheck on the cuda conformance
# cases with the caching allocator bypassed, the benchmarks and the PyTorch peer comparison, then
# print a short table. Logs go to $OUT (or ./gpu-check-out). Usage: .ci/gpu-check.sh [--quick]
# GPU_CHECK_STAGES picks stages (comma-separated, default all): ctest, conformance, llama, serve, train, check,
# trace, memcheck, bench, before_after (with GPU_BEFORE_SRC, an unpacked older source tree:
# .ci/gpu-before-after.sh), linear, comm, peers, cpu (the CPU backend's SIMD kernels and xhal-bench's
# read_bound cases, when bench/stage-cpu-deps.sh's .deps/cpu.tar.gz was carried along;
# CPU_BEFORE_AFTER=N adds N rounds of bench/cpu-before-after.sh; CPU_AB_PLUGIN=DIR adds
# CPU_AB_ROUNDS (2) rounds of xhal-bench with CPU_BENCH_FILTER, a cpu plugin in DIR (libxhal_cpu.so
# built here from another commit, carried) alternated with this build's), cpu_peers (with cpu: the
# PyTorch comparison on the CPU). The CUDA build runs unless only cpu stages are asked for.
# GPU_BENCH_FILTER (a regex of xhal-bench case names) and PEERS_ONLY (one of torch_compare's op
# names) narrow the bench and peers stages, MEMCHECK_FILTER (a gtest filter) the memcheck stage,
# TRAIN_STEPS (default 40) the train stage's steps, GPU_BUILD_TARGETS (space-separated CMake targets) the
# build, for an iteration that needs only some programs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# Logs are written to a work folder and packed into one archive under $OUT at the end (the device
# tool brings back only a few files).
final=${OUT:-gpu-check-out}
out=$(mktemp -d)
mkdir -p "$final"
trap 'tar -czf "$final/logs.tgz" -C "$out" . 2>/dev/null' EXIT
quick=""
[ "${1:-}" = "--quick" ] && quick="--quick"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
summary=()
note() { summary+=("$1"); echo "== $1"; }
stages=",${GPU_CHECK_STAGES:-ctest,conformance,llama,serve,train,check,trace,memcheck,bench,before_after,linear,comm,peers,cpu,cpu_peers},"
want() { [[ $stages == *",$1,"* ]]; }
# The Hopper kernels; disabled, the same calls take the portable mma.sync kernels.
wgmma="cuda.flash_attention_wgmma,cuda.flash_attention_varlen_wgmma,cuda.attention_backward_wgmma,cuda.paged_prefill_wgmma"

# DLPack's header: Debian's package where present, else a copy shipped in a Python package.
dlpack=""
for dir in /usr/include /usr/local/include; do [ -f "$dir/dlpack/dlpack.h" ] && dlpack=$dir && break; done
if [ -z "$dlpack" ]; then
  # PyTorch ships the header as ATen/dlpack.h: expose it as <dlpack/dlpack.h> in the build tree.
  header=$(find / \( -path /proc -o -path /sys \) -prune -o \( -path '*/dlpack/dlpack.h' -o -path '*/ATen/dlpack.h' \) -print 2>/dev/null | head -n 1)
  if [ -n "$header" ]; then
    dlpack=$PWD/build-gpu/dlpack-include
    mkdir -p "$dlpack/dlpack" && cp "$header" "$dlpack/dlpack/dlpack.h"
  fi
fi
# NCCL for the collectives, loaded at run time: the system's, else the copy a Python package ships.
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2'; then
  nccl=$(find / \( -path /proc -o -path /sys \) -prune -o -name 'libnccl.so.2' -print 2>/dev/null | head -n 1)
  if [ -n "$nccl" ]; then
    LD_LIBRARY_PATH=$(dirname "$nccl")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
  fi
fi
# nlohmann/json.hpp for examples/serve's config and safetensors reader: Debian's where present, else
# a copy another package ships (the image has no apt package of it).
json_include=""
if ! [ -f /usr/include/nlohmann/json.hpp ]; then
  json=$(find / \( -path /proc -o -path /sys \) -prune -o -path '*/nlohmann/json.hpp' -print 2>/dev/null | head -n 1)
  [ -n "$json" ] && json_include=$(dirname "$(dirname "$json")")
fi
# nccl.h and the library for xhal-comm-bench's raw NCCL comparison.
nccl_header=$(find / \( -path /proc -o -path /sys \) -prune -o -name nccl.h -print 2>/dev/null | head -n 1)
nccl_root=${nccl_header:+$(dirname "$(dirname "$nccl_header")")}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

# The CUDA build, unless only the CPU stages were asked for (they build their own tree).
build="build-gpu"
if ! [[ $stages =~ ^,(cpu,|cpu_peers,)+$ ]]; then
  start=$(date +%s)
  export XHAL_GPU_CMAKE_ARGS="-DXHAL_WITH_CUDA=ON -DXHAL_CUDA_ARCHITECTURES=90a ${dlpack:+-DDLPACK_INCLUDE_DIR=$dlpack} ${nccl_root:+-DNCCL_ROOT=$nccl_root} ${json_include:+-DXHAL_JSON_INCLUDE=$json_include}"
  # shellcheck disable=SC2086
  if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release $XHAL_GPU_CMAKE_ARGS >"$out/configure.log" 2>&1 &&
     cmake --build "$build" -j"$(nproc)" ${GPU_BUILD_TARGETS:+--target $GPU_BUILD_TARGETS} >"$out/build.log" 2>&1; then
    note "build: ok in $(( $(date +%s) - start )) s (dlpack from ${dlpack:-?})"
  else
    note "build: FAILED (see build.log / configure.log)"
    tail -n 40 "$out/configure.log" "$out/build.log"
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
  "$build/bin/xhal-info" >"$out/xhal-info.txt" 2>&1
  grep -E "cuda|Default" "$out/xhal-info.txt" | head -n 6
fi

if want ctest; then
  ctest --test-dir "$build" -LE no_gpu --output-on-failure -j8 >"$out/ctest.log" 2>&1
  note "ctest: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -n 1)"
  grep -E "^\s+[0-9]+ - .*(Failed|Timeout|Exception)" "$out/ctest.log" | head -n 10
  note "collectives: $(grep -E 'comm_(cuda|mpi|single|fault)' "$out/ctest.log" | sed -E 's/.*Test +#[0-9]+: //; s/ \.+/:/; s/ +[0-9.]+ sec//' | tr -s ' ' | tr '\n' ';')"
  grep -hE "rank 0: |create failed after" "$out/ctest.log" | head -n 6
fi

if want conformance; then
  "$build/bin/xhal_conformance" --gtest_filter='*cuda_*' >"$out/conformance-cuda.log" 2>&1
  note "conformance cuda: $(grep -E '^\[  (PASSED|FAILED)' "$out/conformance-cuda.log" | tr '\n' ' ')"
  grep -E "Failure|elements out of tolerance" -A1 "$out/conformance-cuda.log" | head -n 20
  # The same attention cases through the mma.sync kernel, which the wgmma one takes over on sm_90.
  XHAL_DISABLE_KERNELS=$wgmma "$build/bin/xhal_conformance" --gtest_filter='*Attention*/cuda_*:*PagedPrefill*/cuda_*' \
    >"$out/conformance-cuda-mma.log" 2>&1
  note "conformance cuda attention, wgmma disabled: $(grep -E '^\[  (PASSED|FAILED)' "$out/conformance-cuda-mma.log" | tr '\n' ' ')"
  grep -E "Failure|elements out of tolerance" -A1 "$out/conformance-cuda-mma.log" | head -n 10
fi

if want linear; then
  # linear through the portable tiled GEMM (what the hip plugin runs), cuBLASLt set aside.
  XHAL_DISABLE_KERNELS=cuda.linear_cublaslt,cuda.linear_backward_cublaslt "$build/bin/xhal_conformance" --gtest_filter='*Linear*/cuda_*' \
    >"$out/conformance-cuda-tiled.log" 2>&1
  note "conformance cuda linear, cuBLASLt disabled: $(grep -E '^\[  (PASSED|FAILED)' "$out/conformance-cuda-tiled.log" | tr '\n' ' ')"
  grep -E "Failure|elements out of tolerance|kernel" -A1 "$out/conformance-cuda-tiled.log" | head -n 10
  # The portable tiled GEMM against cuBLASLt (the ceiling row) in one run of each.
  "$build/bin/xhal-bench" --device cuda:0 $quick --benchmark_min_time=0.2 --benchmark_filter='^(linear|ceiling/gemm)' \
    >"$out/bench-linear.txt" 2>&1
  XHAL_DISABLE_KERNELS=cuda.linear_cublaslt,cuda.linear_backward_cublaslt "$build/bin/xhal-bench" --device cuda:0 $quick --benchmark_min_time=0.2 \
    --benchmark_filter='^(linear|ceiling/gemm)' >"$out/bench-linear-tiled.txt" 2>&1
  note "linear: cuBLASLt then the tiled GEMM (exit $?)"
  grep -hE "^(ceiling/gemm|linear)" "$out/bench-linear.txt" "$out/bench-linear-tiled.txt" | sed -E 's/ +[0-9.]+ ms +[0-9]+ +/ /; s/ +/ /g'
fi

if want llama; then
  "$build/bin/llama_block" >"$out/llama_block.txt" 2>&1
  note "llama_block on cuda: exit $? $(grep -E '^vs cpu' "$out/llama_block.txt")"
fi

if want serve; then
  # examples/serve: a ~1 B model (Llama 3.2 1B's shapes, random bf16 weights) serving 64 requests of
  # 128-1024 prompt tokens and 128 new ones with chunks of 512; then the greedy check against the
  # step-by-step reference on a small f32 model.
  "$build/bin/serve" --preset 1b --dtype bf16 --requests 64 --prompt-min 128 --prompt-max 1024 --max-new 128 \
    --chunk 512 --max-running 64 >"$out/serve_1b.txt" 2>&1
  note "serve 1b on cuda: exit $?"
  grep -E "^(serve|requests|prefill|decode|step)" "$out/serve_1b.txt"
  # The same with the KV cache in f8_e4m3 (half the bytes decode reads).
  "$build/bin/serve" --preset 1b --dtype bf16 --requests 64 --prompt-min 128 --prompt-max 1024 --max-new 128 \
    --chunk 512 --max-running 64 --fp8-kv >"$out/serve_1b_fp8_kv.txt" 2>&1
  note "serve 1b on cuda, fp8 KV cache: exit $?"
  grep -E "^(prefill|decode)" "$out/serve_1b_fp8_kv.txt"
  "$build/bin/serve" --dtype f32 --requests 20 --prompt-min 1 --prompt-max 200 --max-new 20 --chunk 64 \
    --max-running 8 --check >"$out/serve_check.txt" 2>&1
  note "serve --check on cuda: exit $?, $(grep -E '^check' "$out/serve_check.txt")"
  "$build/bin/serve" --dtype bf16 --requests 20 --prompt-min 1 --prompt-max 200 --max-new 20 --chunk 64 \
    --max-running 8 --check --fp8-kv >"$out/serve_check_fp8_kv.txt" 2>&1
  note "serve --check --fp8-kv on cuda: exit $?, $(grep -E '^check' "$out/serve_check_fp8_kv.txt")"
fi

if want train; then
  # examples/train_llama on cuda against the CPU backend step by step, then under the shadow check
  # (every cuda kernel of a training step against the CPU reference).
  "$build/bin/train_llama" --steps "${TRAIN_STEPS:-40}" --compare cpu >"$out/train_compare.txt" 2>&1
  note "train_llama on cuda, --compare cpu: exit $?"
  grep -E "^(train_llama|step +(1|2|5|10|20|30|40|60|80|100) )|relative|^  [a-z]" "$out/train_compare.txt" | cut -c1-160
  XHAL_CHECK=cpu XHAL_CHECK_ACTION=throw "$build/bin/train_llama" --steps 2 >"$out/train_check.txt" 2>&1
  note "train_llama on cuda under XHAL_CHECK=cpu, throw: exit $?"
  grep -A24 '^xhal shadow check' "$out/train_check.txt"
fi

if want check; then
  # The shadow check where it matters: cuda kernels against the CPU reference, with a trace.
  XHAL_CHECK=cpu XHAL_TRACE="$out/llama_trace.json" "$build/bin/llama_block" --hidden 512 --tokens 64 --decode 4 \
    >"$out/llama_check.txt" 2>&1
  note "llama_block on cuda under XHAL_CHECK=cpu: exit $?, $(grep -c DIVERGES "$out/llama_check.txt") divergent calls"
  grep -A12 '^xhal shadow check' "$out/llama_check.txt"
  "$build/bin/xhal-info" --trace-summary "$out/llama_trace.json" --top 8 2>&1 | tee "$out/trace_summary.txt"
  XHAL_CHECK=cpu XHAL_CHECK_ACTION=throw "$build/bin/xhal_conformance" --gtest_filter='Backends/Conformance.*/cuda_*' \
    >"$out/conformance_check.txt" 2>&1
  note "cuda conformance under XHAL_CHECK=cpu, throw: exit $? $(grep -E '^\[  (PASSED|FAILED)' "$out/conformance_check.txt" | tr '\n' ' ')"
  grep -A12 '^xhal shadow check' "$out/conformance_check.txt"
fi
if want trace; then
  # The trace with device time from timed events (no shadow check: its copies are not the op's).
  XHAL_TRACE="$out/llama_device_trace.json" "$build/bin/llama_block" \
    >"$out/llama_trace_run.txt" 2>&1
  note "llama_block traced on cuda: exit $?, $(grep -c '"device":"cuda' "$out/llama_device_trace.json") cuda events, $(grep -c device_time_us "$out/llama_device_trace.json") with device time"
  "$build/bin/xhal-info" --trace-summary "$out/llama_device_trace.json" --top 8 2>&1 | tee "$out/device_trace_summary.txt"
fi
if want memcheck && command -v compute-sanitizer >/dev/null; then
  XHAL_ALLOCATOR=direct timeout 400 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$build/bin/xhal_conformance" --gtest_filter="${MEMCHECK_FILTER:-*cuda_bf16*:*cuda_f32*}" >"$out/memcheck.log" 2>&1
  note "memcheck: exit $? $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -n 1)"
fi

if want bench; then
  "$build/bin/xhal-bench" --device cuda:0 $quick --benchmark_min_time=0.2 \
    ${GPU_BENCH_FILTER:+--benchmark_filter=$GPU_BENCH_FILTER} \
    --benchmark_out="$out/bench.json" --benchmark_out_format=json >"$out/bench.txt" 2>&1
  note "xhal-bench: exit $?"
  grep -E "^(ceiling|rms|fused|swiglu|rope|cross|embedding|attention|paged|linear|adamw|global)" "$out/bench.txt" |
    sed -E 's/ +[0-9.]+ ms +[0-9]+ +/ /; s/ +/ /g' | head -n 40
  XHAL_DISABLE_KERNELS=$wgmma "$build/bin/xhal-bench" \
    --device cuda:0 $quick --benchmark_min_time=0.2 --benchmark_filter='^attention' >"$out/bench-mma.txt" 2>&1
  note "xhal-bench attention with the mma.sync kernel: exit $?"
  grep -E "^attention" "$out/bench-mma.txt" | sed -E 's/ +[0-9.]+ ms +[0-9]+ +/ /; s/ +/ /g' | head -n 6
fi

if want before_after && [ -n "${GPU_BEFORE_SRC:-}" ]; then
  .ci/gpu-before-after.sh "$GPU_BEFORE_SRC" "$out" "${GPU_BEFORE_ROUNDS:-3}" | tee "$out/before-after.txt"
  note "before/after: $(grep -c '%$' "$out/before-after.txt") cases, see before-after.txt"
fi

# The CPU backend with its SIMD and BLAS kernels on this machine's CPU, when Highway and OpenBLAS
# were carried in (bench/stage-cpu-deps.sh; the image has neither): conformance on every CPU path
# this CPU can take, then the CPU benchmarks on all its cores.
if want cpu; then
  [ -f .deps/cpu.tar.gz ] && [ ! -d .deps/cpu ] && tar -xzf .deps/cpu.tar.gz -C .deps
  deps=$PWD/.deps/cpu/usr
  arch=$(gcc -dumpmachine)
  if [ -f "$deps/include/hwy/highway.h" ]; then
    libs=$deps/lib/$arch
    export LD_LIBRARY_PATH=$libs:$libs/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # OpenBLAS 0.3.21 does not know this machine's Xeon and would run its Prescott kernels (a
    # fifth of the rate); its nearest known core with AVX512_BF16 is Cooper Lake.
    grep -q avx512_bf16 /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-COOPERLAKE}
    cpu_build="build-gpu-cpu"
    start=$(date +%s)
    if cmake -S . -B "$cpu_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXHAL_WITH_CUDA=OFF -DXHAL_WITH_HIP=OFF \
         -DXHAL_WITH_HIGHWAY=ON -DXHAL_WITH_BLAS=ON -DCMAKE_PREFIX_PATH="$deps" \
         -DXHAL_OPENBLAS_LIBRARY="$libs/openblas-openmp/libopenblas.so" \
         -DXHAL_OPENBLAS_INCLUDE="$deps/include/$arch/openblas-openmp" ${dlpack:+-DDLPACK_INCLUDE_DIR=$dlpack} \
         >"$out/cpu-configure.log" 2>&1 &&
       cmake --build "$cpu_build" -j"$(nproc)" --target xhal xhal_cpu xhal_conformance xhal_bench xhal_info llama_block \
         >"$out/cpu-build.log" 2>&1; then
      note "cpu build: ok in $(( $(date +%s) - start )) s"
      lscpu | grep -E "Model name|^CPU\(s\)|L3" | tr -s ' ' | tee "$out/lscpu.txt"
      "$cpu_build/bin/xhal-info" 2>&1 | grep -E "version: xhal cpu|^  cpu " | tee "$out/cpu-info.txt"
      for off in "" avx512_bf16 avx512; do
        XHAL_CPU_DISABLE=$off "$cpu_build/bin/xhal_conformance" --gtest_filter='*cpu_*' >"$out/conformance-cpu-$off.log" 2>&1
        note "conformance cpu, XHAL_CPU_DISABLE=${off:-none}: $(grep -E '^\[  (PASSED|FAILED)' "$out/conformance-cpu-$off.log" | tr '\n' ' ')"
        grep -E "Failure|out of tolerance|element" -A1 "$out/conformance-cpu-$off.log" | head -n 10
      done
      # xhal-bench on the cpu with the plugins in $1 (medians of three, CPU_BENCH_FILTER's cases)
      # into $out/$2.txt; its exit noted as $3, its medians shown.
      cpu_bench() {
        XHAL_PLUGIN_PATH=$1 "$cpu_build/bin/xhal-bench" --device cpu $quick --benchmark_repetitions=3 \
          --benchmark_report_aggregates_only=true ${CPU_BENCH_FILTER:+--benchmark_filter=$CPU_BENCH_FILTER} \
          >"$out/$2.txt" 2>&1
        note "$3: exit $?"
        grep -E "_median" "$out/$2.txt" | sed -E 's/_median//; s/ +[0-9.]+ ms +[0-9]+ +/ /; s/ +/ /g'
      }
      cpu_bench "$cpu_build/lib" cpu-bench "xhal-bench cpu"
      if [ -n "${CPU_AB_PLUGIN:-}" ]; then
        for round in $(seq "${CPU_AB_ROUNDS:-2}"); do
          cpu_bench "$(realpath "$CPU_AB_PLUGIN")" "cpu-ab-$round-before" "cpu A/B round $round, before"
          cpu_bench "$cpu_build/lib" "cpu-ab-$round-after" "cpu A/B round $round, after"
        done
      fi
      if want cpu_peers && python3 -c "import torch" 2>/dev/null; then
        PYTHONUNBUFFERED=1 timeout 500 python3 bench/peers/torch_compare.py --device cpu \
          --lib "$cpu_build/lib/libxhal.so" $quick --json "$out/cpu-peers.json" >"$out/cpu-peers.txt" 2>&1
        note "torch_compare on the cpu: exit $?"
        sed -n '/^op /,$p' "$out/cpu-peers.txt"
      fi
      if [ -n "${CPU_BEFORE_AFTER:-}" ]; then
        OUT="$out/cpu-before-after" bench/cpu-before-after.sh "$cpu_build/bin" "$CPU_BEFORE_AFTER" >"$out/cpu-before-after.txt" 2>&1
        note "cpu before/after (reference kernels vs SIMD/BLAS, $CPU_BEFORE_AFTER rounds): exit $?"
        sed -n '/^| op /,$p' "$out/cpu-before-after.txt"
      fi
    else
      note "cpu build: FAILED (see cpu-configure.log / cpu-build.log)"
      tail -n 20 "$out/cpu-configure.log" "$out/cpu-build.log"
    fi
  else
    note "cpu: skipped (no Highway under .deps/cpu: run bench/stage-cpu-deps.sh and carry .deps/cpu.tar.gz)"
  fi
fi

gpus=$(nvidia-smi -L | wc -l)
if want comm && [ "$gpus" -ge 2 ]; then
  timeout 300 tests/run_ranks.sh 2 "$build/bin/xhal-comm-bench" --device cuda --iters 20 >"$out/comm-bench.txt" 2>&1
  note "xhal-comm-bench on 2 GPUs: exit $? (nccl.h: ${nccl_header:-not found})"
  grep -E "NCCL WARN|nonblocking communicator" "$out/comm-bench.txt" | head -n 4
  for fault in skip kill; do
    timeout 60 tests/run_ranks.sh 2 "$build/bin/xhal_comm_fault_test" $fault cuda 2>&1 | grep -E "rank 0\]" | head -n 3
  done
  awk '$1 == "[rank" && $2 == "0]" && ($3 == "op" || $4 == 8 || $4 == 65536 || $4 == 1048576 || $4 == 1073741824)' "$out/comm-bench.txt"
fi

if want peers && [ -f bench/peers/torch_compare.py ]; then
  PYTHONUNBUFFERED=1 timeout 500 python3 bench/peers/torch_compare.py --lib "$build/lib/libxhal.so" \
    $quick ${PEERS_ONLY:+--only "$PEERS_ONLY"} --json "$out/peers.json" >"$out/peers.txt" 2>&1
  note "torch_compare: exit $?"
  tail -n 40 "$out/peers.txt"
fi
echo
echo "===== summary ====="
printf '%s\n' "${summary[@]}"
