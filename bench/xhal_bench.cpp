// xhal-bench: every op at realistic LLM shapes on one device, with the machine's ceilings measured
// in the same run (a large copy for bandwidth, a large GEMM for FLOP/s), so each figure is also a
// fraction of what the machine can do here and now.
//
//   xhal-bench [--device cpu|cuda:0|...] [--dtype f32|f16|bf16] [--quick] [benchmark flags]
//
// Counters: GB/s from the bytes an op must move (each input read once, each output written once),
// TFLOP/s for attention (4*B*H*Sq*Sk*D, halved for causal) and linear (2*M*N*K), and frac_copy or
// frac_gemm against the ceilings. Time is host wall time; on accelerators every iteration ends with
// DeviceManager::synchronize, so it includes the launch and the wait.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#if defined(XHAL_BENCH_BLAS)
#include <cblas.h>
#endif
#if defined(XHAL_BENCH_READ_BOUND)
#include "bench/cpu_read_bound.hpp"
#endif

#include "bench/bench_case.hpp"
#include "xhal/xhal.hpp"

namespace {

using namespace xhal::bench;

struct Options {
  Device device;
  DType dtype = DType::bf16;
  bool quick = false;
};

Shapes shapes_for(xhal::DeviceType type, bool quick) {
  // clang-format off
  // CPU: memory-bound ops on tensors of 256 MiB (bf16) and more, far beyond the last-level cache.
  static const Shapes kCpu{.rows = 16384, .hidden = 8192, .rope_tokens = 16384,
                           .gradient_rows = {{16384, 8192}},
                           .ce_tokens = 1024, .ce_vocab = 128256, .optimizer_params = int64_t(1) << 24,
                           .attn_batch = 1, .attn_heads = 16, .attn_seq = 2048,
                           .varlen_seqs = {1024, 512, 384, 128},
                           .paged_batch = 16, .paged_ctx = 4096, .paged_long_ctx = 65536,
                           .prefill_seqs = 2, .prefill_chunk = 256,
                           .linear_m = 4096, .linear_n = 4096, .linear_k = 4096,
                           .decode_n = 28672, .decode_k = 4096,
                           .copy_mib = 1024, .gemm_size = 4096};
  static const Shapes kAccelerator{.rows = 16384, .hidden = 8192, .rope_tokens = 16384,
                                   .gradient_rows = {{16384, 4096}, {65536, 8192}},
                                   .ce_tokens = 8192, .ce_vocab = 128256, .optimizer_params = int64_t(1) << 30,
                                   .attn_batch = 4, .attn_heads = 32, .attn_seq = 4096,
                                   .varlen_seqs = {4096, 2048, 1024, 512, 512},
                                   .paged_batch = 64, .paged_ctx = 4096, .paged_long_ctx = 131072,
                                   .prefill_seqs = 32, .prefill_chunk = 512,
                                   .linear_m = 8192, .linear_n = 8192, .linear_k = 8192,
                                   .decode_n = 28672, .decode_k = 4096,
                                   .copy_mib = 1024, .gemm_size = 8192};
  // clang-format on
  Shapes s = type == xhal::DeviceType::cpu ? kCpu : kAccelerator;
  if (quick) {
    for (int64_t* n : {&s.rows, &s.rope_tokens, &s.ce_tokens, &s.optimizer_params, &s.attn_seq, &s.paged_ctx,
                       &s.paged_long_ctx, &s.linear_m, &s.prefill_chunk}) {
      *n /= 8;
    }
    for (int64_t& n : s.varlen_seqs) n /= 8;
    for (auto& [rows, hidden] : s.gradient_rows) rows /= 8;
    s.gemm_size /= 2;
  }
  return s;
}

struct Ceilings {
  double copy_gbps = 0, gemm_tflops = 0;
  // On the CPU each op call (of very short ops, every few calls: run_case) is followed by a call
  // of its ceiling (copy for memory-bound ops, GEMM for compute-bound ones) and the fraction is
  // the median of the pairs' ratios: a shared VM's bandwidth drifts by tens of percent within
  // seconds, so a ceiling measured once would not describe the moment an op ran. Accelerators are
  // steady: there the up-front ceilings serve.
  std::function<void()> copy, gemm;
  double copy_bytes = 0, gemm_flops = 0;
};
Ceilings g_ceilings;

// The inputs of the case being run, built and warmed up once: Google Benchmark calls a benchmark
// function several times while it picks the iteration count, inputs of hundreds of MiB take
// longer to fill than to process, and the previous case's inputs are freed first.
struct Prepared {
  std::string name;
  std::function<void()> call;  // owns the case's tensors
};
// Function-local, so it is created after (and destroyed before) xhal's own singletons.
Prepared& prepared_state() {
  static Prepared p;
  return p;
}

const std::function<void()>& prepared(const Case& c, Device device) {
  Prepared& p = prepared_state();
  if (p.name != c.name) {
    p = {};
    p.call = c.build();
    p.name = c.name;
    p.call();  // warm-up: first touch of the outputs, lazy kernel loading
    xhal::DeviceManager::instance().synchronize(device);
  }
  return p.call;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

double seconds_of(const std::function<void()>& call, Device device, bool sync) {
  const auto t0 = std::chrono::steady_clock::now();
  call();
  if (sync) xhal::DeviceManager::instance().synchronize(device);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_case(benchmark::State& state, const Case& c, Device device) {
  const std::function<void()>& call = prepared(c, device);
  const bool sync = device.type != xhal::DeviceType::cpu;
  const bool memory = c.bound == Bound::memory;
  const std::function<void()>& ceiling = memory ? g_ceilings.copy : g_ceilings.gemm;
  std::vector<double> op, ratio;  // per call: seconds, and the fraction of its paired ceiling
  // A call is paired while the ceiling calls so far took at most kMaxCeilingShare times the op's
  // calls: every call of the largest ops, but not a 1 GiB copy after each of thousands of calls of
  // a microsecond op (hours).
  constexpr double kMaxCeilingShare = 16;
  double op_seconds = 0, ceiling_seconds = 0;
  for (auto _ : state) {
    op.push_back(seconds_of(call, device, sync));
    op_seconds += op.back();
    if (ceiling && ceiling_seconds <= kMaxCeilingShare * op_seconds) {
      state.PauseTiming();
      const double t = seconds_of(ceiling, device, sync);
      ceiling_seconds += t;
      ratio.push_back(memory ? (c.bytes / op.back()) / (g_ceilings.copy_bytes / t)
                             : (c.flops / op.back()) / (g_ceilings.gemm_flops / t));
      state.ResumeTiming();
    }
  }
  // Rates from the median call, computed here rather than with kIsRate counters so the fractions
  // can use them.
  const double per_call = median(op);
  const double gbps = c.bytes / per_call * 1e-9;
  state.counters["GB/s"] = gbps;
  if (c.flops > 0) state.counters["TFLOP/s"] = c.flops / per_call * 1e-12;
  const double frac = !ratio.empty() ? median(ratio)
                      : memory       ? gbps / g_ceilings.copy_gbps
                                     : c.flops / per_call * 1e-12 / g_ceilings.gemm_tflops;
  state.counters[memory ? "frac_copy" : "frac_gemm"] = frac;
}

// Median wall time of one call, outside Google Benchmark: the ceilings must be known before the
// op benchmarks report their fractions.
double median_seconds(const Case& c, Device device, int reps) {
  const std::function<void()>& call = prepared(c, device);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) times.push_back(seconds_of(call, device, true));
  return median(times);
}

// Read + write of a large buffer: the bandwidth every memory-bound op is measured against.
Case ceiling_copy(const Shapes& s, Device dev) {
  const int64_t copy_bytes = s.copy_mib << 20;
  return {fmt::format("ceiling/copy/{}MiB", s.copy_mib), 2.0 * double(copy_bytes), 0, Bound::memory, [=] {
            Tensor src = random_tensor({copy_bytes / 4}, DType::f32, dev);
            Tensor dst = Tensor::empty({copy_bytes / 4}, DType::f32, dev);
            return std::function<void()>([=] { xhal::copy(dst, src); });
          }};
}

std::vector<Case> ceiling_cases(const Shapes& s, Device dev, DType dtype) {
  const int64_t g = s.gemm_size;
  // On an accelerator linear is the vendor BLAS (cuBLASLt): its rate in the benchmark dtype is the
  // machine's matrix ceiling. On the CPU the ceiling is the BLAS's f32 sgemm called directly (not
  // through xhal), so that xhal's linear is a fraction of it; without a BLAS, xhal's own f32 linear.
  const DType gemm_dtype = dev.type == xhal::DeviceType::cpu ? DType::f32 : dtype;
  const double gemm_elt = double(xhal::dtype_size(gemm_dtype));
#if defined(XHAL_BENCH_BLAS)
  if (dev.type == xhal::DeviceType::cpu) {
    return {ceiling_copy(s, dev),
            {fmt::format("ceiling/gemm_blas_f32/{}x{}x{}", g, g, g), 3.0 * double(g * g) * 4.0,
             2.0 * double(g) * double(g) * double(g), Bound::compute, [=] {
               Tensor a = random_tensor({g, g}, DType::f32, dev), b = random_tensor({g, g}, DType::f32, dev);
               Tensor c = Tensor::empty({g, g}, DType::f32, dev);
               return std::function<void()>([=] {
                 cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(g), blasint(g), blasint(g), 1.0f,
                             static_cast<const float*>(a.data()), blasint(g), static_cast<const float*>(b.data()),
                             blasint(g), 0.0f, static_cast<float*>(c.data()), blasint(g));
               });
             }}};
  }
#endif
  return {
      ceiling_copy(s, dev),
      {fmt::format("ceiling/gemm_linear_{}/{}x{}x{}", xhal::dtype_name(gemm_dtype), g, g, g),
       3.0 * double(g * g) * gemm_elt, 2.0 * double(g) * double(g) * double(g), Bound::compute,
       [=] {
         Tensor x = random_tensor({g, g}, gemm_dtype, dev), w = random_tensor({g, g}, gemm_dtype, dev);
         Tensor out = Tensor::empty({g, g}, gemm_dtype, dev);
         return std::function<void()>([=] { xhal::ops::linear(x, w, nullptr, out); });
       }},
  };
}

std::vector<Case> op_cases(const Shapes& s, DType dt, Device dev) {
  const double e = double(xhal::dtype_size(dt));
  const std::string tn(xhal::dtype_name(dt));
  const int64_t M = s.rows, N = s.hidden, D = kHeadDim;
  std::vector<Case> cases;
  auto add = [&](std::string name, double bytes, double flops, Bound bound, auto build) {
    cases.push_back({std::move(name), bytes, flops, bound, build});
  };
  const std::string mn = fmt::format("{}x{}", M, N);

  add("rms_norm/" + mn + "/" + tn, (2.0 * M * N + N) * e, 0, Bound::memory, [=] {
    Tensor x = random_tensor({M, N}, dt, dev), w = random_tensor({N}, dt, dev);
    Tensor out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] { xhal::ops::rms_norm(x, w, 1e-5f, out); });
  });
  add("layer_norm/" + mn + "/" + tn, (2.0 * M * N + 2.0 * N) * e, 0, Bound::memory, [=] {
    Tensor x = random_tensor({M, N}, dt, dev), w = random_tensor({N}, dt, dev), b = random_tensor({N}, dt, dev);
    Tensor out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] {
      const xhal::TensorView bias = b;
      xhal::ops::layer_norm(x, w, &bias, 1e-5f, out);
    });
  });
  // x read, residual read and written, out written.
  add("fused_add_rms_norm/" + mn + "/" + tn, (4.0 * M * N + N) * e, 0, Bound::memory, [=] {
    Tensor x = random_tensor({M, N}, dt, dev), r = random_tensor({M, N}, dt, dev);
    Tensor w = random_tensor({N}, dt, dev), out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] { xhal::ops::fused_add_rms_norm(x, r, w, 1e-5f, out); });
  });
  add("swiglu/" + mn + "/" + tn, 3.0 * M * N * e, 0, Bound::memory, [=] {
    Tensor g = random_tensor({M, N}, dt, dev), u = random_tensor({M, N}, dt, dev);
    Tensor out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] { xhal::ops::swiglu(g, u, out); });
  });
  add("swiglu_packed/" + mn + "/" + tn, 3.0 * M * N * e, 0, Bound::memory, [=] {
    Tensor x = random_tensor({M, 2 * N}, dt, dev), out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] { xhal::ops::swiglu_packed(x, out); });
  });
  add("gelu_and_mul/erf/" + mn + "/" + tn, 3.0 * M * N * e, 0, Bound::memory, [=] {
    Tensor g = random_tensor({M, N}, dt, dev), u = random_tensor({M, N}, dt, dev);
    Tensor out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] { xhal::ops::gelu_and_mul(g, u, out); });
  });
  for (const auto approximation : {xhal::ops::GeluApproximation::erf, xhal::ops::GeluApproximation::tanh}) {
    const std::string name = approximation == xhal::ops::GeluApproximation::erf ? "erf" : "tanh";
    add("gelu_and_mul_packed/" + name + "/" + mn + "/" + tn, 3.0 * M * N * e, 0, Bound::memory, [=] {
      Tensor x = random_tensor({M, 2 * N}, dt, dev), out = Tensor::empty({M, N}, dt, dev);
      return std::function<void()>([=] { xhal::ops::gelu_and_mul_packed(x, out, approximation); });
    });
  }

  add_serving_cases(s, dt, dev, cases);
  add_training_cases(s, dt, dev, cases);

  // rope (Llama-3 8B heads): q and k read and written in place, positions and the cache rows read.
  const int64_t T = s.rope_tokens, Hq = 32, Hkv = 8;
  // rope_backward moves the same bytes (the inverse rotation).
  for (const bool backward : {false, true}) {
    add(fmt::format("{}/T{}_Hq{}_Hkv{}_D{}/{}", backward ? "rope_backward" : "rope", T, Hq, Hkv, D, tn),
        2.0 * T * (Hq + Hkv) * D * e + T * 4.0 + T * D * 4.0, 0, Bound::memory, [=] {
          Tensor q = random_tensor({T, Hq, D}, dt, dev), k = random_tensor({T, Hkv, D}, dt, dev);
          std::vector<int32_t> pos(static_cast<size_t>(T));
          std::iota(pos.begin(), pos.end(), 0);
          Tensor positions = i32_tensor(pos, {T}, dev);
          Tensor cache = xhal::ops::rope_cache(T, D, 500000.0, dev);
          const auto rotate = backward ? xhal::ops::rope_backward : xhal::ops::rope;
          return std::function<void()>([=] { rotate(q, k, positions, cache, xhal::RopeStyle::neox, nullptr); });
        });
  }

  const int64_t B = s.attn_batch, H = s.attn_heads, S = s.attn_seq;
  for (bool causal : {true, false}) {
    const double flops = 4.0 * B * H * S * S * D / (causal ? 2.0 : 1.0);
    add(fmt::format("attention/{}/B{}_H{}_S{}_D{}/{}", causal ? "causal" : "full", B, H, S, D, tn),
        4.0 * B * S * H * D * e, flops, Bound::compute, [=] {
          Tensor q = random_tensor({B, S, H, D}, dt, dev), k = random_tensor({B, S, H, D}, dt, dev);
          Tensor v = random_tensor({B, S, H, D}, dt, dev), out = Tensor::empty({B, S, H, D}, dt, dev);
          return std::function<void()>([=] { xhal::ops::attention(q, k, v, out, {.causal = causal}); });
        });
  }

  // attention_backward: dq, dk, dv from dout and the forward's out and lse, which the setup runs
  // once. Its flops are 2.5 times the forward's (five matrix products of the forward's size instead
  // of two: S, dP, dV, dQ, dK); it reads q, k, v, out, dout and writes dq, dk, dv. Head dims 128
  // and 64 (the training targets name both). On GPUs, D128 again in deterministic mode (dq's
  // additions in a fixed order).
  struct BackwardCase {
    bool causal;
    int64_t D;
    bool deterministic;
  };
  std::vector<BackwardCase> backward_cases = {
      {true, D, false}, {false, D, false}, {true, 64, false}, {false, 64, false}};
  if (dev.type != xhal::DeviceType::cpu)
    backward_cases.insert(backward_cases.end(), {{true, D, true}, {false, D, true}});
  for (const auto& [causal, D, deterministic] : backward_cases) {
    const double flops = 2.5 * 4.0 * B * H * S * S * D / (causal ? 2.0 : 1.0);
    add(fmt::format("attention_backward/{}{}/B{}_H{}_S{}_D{}/{}", causal ? "causal" : "full",
                    deterministic ? "_deterministic" : "", B, H, S, D, tn),
        8.0 * B * S * H * D * e, flops, Bound::compute, [=, D = D, causal = causal, deterministic = deterministic] {
          Tensor q = random_tensor({B, S, H, D}, dt, dev), k = random_tensor({B, S, H, D}, dt, dev);
          Tensor v = random_tensor({B, S, H, D}, dt, dev), out = Tensor::empty({B, S, H, D}, dt, dev);
          Tensor dout = random_tensor({B, S, H, D}, dt, dev), lse = Tensor::empty({B, H, S}, DType::f32, dev);
          Tensor dq = Tensor::empty({B, S, H, D}, dt, dev), dk = Tensor::empty({B, S, H, D}, dt, dev);
          Tensor dv = Tensor::empty({B, S, H, D}, dt, dev);
          const xhal::AttentionParams params{.causal = causal};
          const xhal::TensorView lse_view = lse;
          xhal::ops::attention(q, k, v, out, params, &lse_view);
          return std::function<void()>([=] {
            const bool before = xhal::registry::deterministic();
            xhal::registry::set_deterministic(deterministic || before);
            xhal::ops::attention_backward(dout, q, k, v, out, lse, dq, dk, dv, params);
            xhal::registry::set_deterministic(before);
          });
        });
  }

  // attention_varlen: a packed prefill batch of unequal prompts, causal within each.
  std::vector<int32_t> cu{0};
  double varlen_flops = 0;
  for (int64_t len : s.varlen_seqs) {
    cu.push_back(cu.back() + int32_t(len));
    varlen_flops += 4.0 * H * len * len * D / 2.0;
  }
  const int64_t total = cu.back(), max_len = *std::max_element(s.varlen_seqs.begin(), s.varlen_seqs.end());
  add(fmt::format("attention_varlen/causal/{}seqs_T{}_H{}_D{}/{}", s.varlen_seqs.size(), total, H, D, tn),
      4.0 * total * H * D * e, varlen_flops, Bound::compute, [=] {
        Tensor q = random_tensor({total, H, D}, dt, dev), k = random_tensor({total, H, D}, dt, dev);
        Tensor v = random_tensor({total, H, D}, dt, dev), out = Tensor::empty({total, H, D}, dt, dev);
        Tensor cu_t = i32_tensor(cu, {int64_t(cu.size())}, dev);
        return std::function<void()>(
            [=] { xhal::ops::attention_varlen(q, k, v, cu_t, cu_t, max_len, max_len, out, {.causal = true}); });
      });
  add(fmt::format("attention_varlen_backward/causal/{}seqs_T{}_H{}_D{}/{}", s.varlen_seqs.size(), total, H, D, tn),
      8.0 * total * H * D * e, 2.5 * varlen_flops, Bound::compute, [=] {
        Tensor q = random_tensor({total, H, D}, dt, dev), k = random_tensor({total, H, D}, dt, dev);
        Tensor v = random_tensor({total, H, D}, dt, dev), out = Tensor::empty({total, H, D}, dt, dev);
        Tensor dout = random_tensor({total, H, D}, dt, dev), lse = Tensor::empty({H, total}, DType::f32, dev);
        Tensor dq = Tensor::empty({total, H, D}, dt, dev), dk = Tensor::empty({total, H, D}, dt, dev);
        Tensor dv = Tensor::empty({total, H, D}, dt, dev);
        Tensor cu_t = i32_tensor(cu, {int64_t(cu.size())}, dev);
        const xhal::TensorView lse_view = lse;
        xhal::ops::attention_varlen(q, k, v, cu_t, cu_t, max_len, max_len, out, {.causal = true}, &lse_view);
        return std::function<void()>([=] {
          xhal::ops::attention_varlen_backward(dout, q, k, v, cu_t, cu_t, max_len, max_len, out, lse, dq, dk, dv,
                                               {.causal = true});
        });
      });

  // paged_attention: decode, every sequence at the full context, pages shuffled across the pool;
  // and over an f8_e4m3 cache (per-head scales) of the same values, half the bytes a key.
  auto add_paged = [&](int64_t PB, int64_t ctx, bool fp8) {
    const int64_t block = 16, blocks_per_seq = ctx / block;
    const double cached = fp8 ? 1.0 : e;
    add(fmt::format("paged_attention/B{}_Hq{}_Hkv{}_ctx{}_D{}{}/{}", PB, Hq, Hkv, ctx, D, fp8 ? "_fp8cache" : "", tn),
        2.0 * PB * ctx * Hkv * D * cached + 2.0 * PB * Hq * D * e, 0, Bound::memory, [=] {
          const int64_t num_blocks = PB * blocks_per_seq;
          std::vector<int32_t> table(static_cast<size_t>(num_blocks));
          std::iota(table.begin(), table.end(), 0);
          std::shuffle(table.begin(), table.end(), std::mt19937(7));
          Tensor q = random_tensor({PB, Hq, D}, dt, dev), out = Tensor::empty({PB, Hq, D}, dt, dev);
          Tensor kc = random_tensor({num_blocks, block, Hkv, D}, dt, dev);
          Tensor vc = random_tensor({num_blocks, block, Hkv, D}, dt, dev);
          Tensor bt = i32_tensor(table, {PB, blocks_per_seq}, dev);
          Tensor lens = i32_tensor(std::vector<int32_t>(size_t(PB), int32_t(ctx)), {PB}, dev);
          if (!fp8) return std::function<void()>([=] { xhal::ops::paged_attention(q, kc, vc, bt, lens, out); });
          // The caches' codes, written as a serving engine would: kv_cache_write with scales.
          const Tensor k8 = Tensor::empty({num_blocks, block, Hkv, D}, DType::f8_e4m3, dev);
          const Tensor v8 = Tensor::empty({num_blocks, block, Hkv, D}, DType::f8_e4m3, dev);
          const std::vector<float> scale_values(static_cast<size_t>(Hkv), 1.0f / 256);
          const Tensor scales = Tensor::from_host(scale_values.data(), {Hkv}, DType::f32, dev);
          std::vector<int32_t> all(static_cast<size_t>(num_blocks * block));
          std::iota(all.begin(), all.end(), 0);
          const Tensor slots = i32_tensor(all, {num_blocks * block}, dev);
          const xhal::TensorView k_rows(kc.data(), dt, {num_blocks * block, Hkv, D}, dev);
          const xhal::TensorView v_rows(vc.data(), dt, {num_blocks * block, Hkv, D}, dev);
          const xhal::ops::KvCacheScales kv_scales{&scales.view(), &scales.view()};
          xhal::ops::kv_cache_write(k_rows, v_rows, slots, k8, v8, kv_scales);
          return std::function<void()>([=] {
            xhal::ops::paged_attention(q, k8, v8, bt, lens, out, {}, {&scales.view(), &scales.view()});
          });
        });
  };
  add_paged(s.paged_batch, s.paged_ctx, false);
  add_paged(s.paged_batch, s.paged_ctx, true);

  // paged_prefill: a chunk of new tokens for each of prefill_seqs sequences, the chunk the last of
  // its context (causal, bottom-right), pages of 16 and of 128 shuffled across the pool; beside it
  // attention_varlen over the same keys packed (equal work: xhal's dense rate, the paged op's bar).
  {
    const int64_t PB = s.prefill_seqs, chunk = s.prefill_chunk, ctx = s.paged_ctx;
    double flops = 0;
    for (int64_t i = 0; i < chunk; ++i) flops += 4.0 * PB * Hq * D * double(ctx - chunk + i + 1);
    std::vector<int32_t> cu_q{0}, cu_k{0};
    for (int64_t b = 0; b < PB; ++b) {
      cu_q.push_back(cu_q.back() + int32_t(chunk));
      cu_k.push_back(cu_k.back() + int32_t(ctx));
    }
    const double bytes = (2.0 * PB * chunk * Hq * D + 2.0 * PB * ctx * Hkv * D) * e;
    const std::string shape = fmt::format("B{}_chunk{}_ctx{}_Hq{}_Hkv{}_D{}/{}", PB, chunk, ctx, Hq, Hkv, D, tn);
    for (const int64_t block : {int64_t(16), int64_t(128)}) {
      add(fmt::format("paged_prefill/block{}_{}", block, shape), bytes, flops, Bound::compute, [=] {
        const int64_t blocks_per_seq = ctx / block, num_blocks = PB * blocks_per_seq;
        std::vector<int32_t> table(static_cast<size_t>(num_blocks));
        std::iota(table.begin(), table.end(), 0);
        std::shuffle(table.begin(), table.end(), std::mt19937(7));
        Tensor q = random_tensor({PB * chunk, Hq, D}, dt, dev), out = Tensor::empty({PB * chunk, Hq, D}, dt, dev);
        Tensor kc = random_tensor({num_blocks, block, Hkv, D}, dt, dev);
        Tensor vc = random_tensor({num_blocks, block, Hkv, D}, dt, dev);
        Tensor bt = i32_tensor(table, {PB, blocks_per_seq}, dev), cu = i32_tensor(cu_q, {PB + 1}, dev);
        Tensor lens = i32_tensor(std::vector<int32_t>(size_t(PB), int32_t(ctx)), {PB}, dev);
        return std::function<void()>(
            [=] { xhal::ops::paged_prefill(q, kc, vc, cu, bt, lens, chunk, out, {.causal = true}); });
      });
    }
    add("attention_varlen/prefill_chunks/" + shape, bytes, flops, Bound::compute, [=] {
      Tensor q = random_tensor({PB * chunk, Hq, D}, dt, dev), out = Tensor::empty({PB * chunk, Hq, D}, dt, dev);
      Tensor k = random_tensor({PB * ctx, Hkv, D}, dt, dev), v = random_tensor({PB * ctx, Hkv, D}, dt, dev);
      Tensor cq = i32_tensor(cu_q, {PB + 1}, dev), ck = i32_tensor(cu_k, {PB + 1}, dev);
      return std::function<void()>(
          [=] { xhal::ops::attention_varlen(q, k, v, cq, ck, chunk, ctx, out, {.causal = true}); });
    });
  }
#if defined(XHAL_BENCH_READ_BOUND)
  // The CPU's bound for that case: its cache read block by block in the table's order (each entry's
  // K block, then its V block) with 0-8 f32 FMAs per vector and nothing else
  // (bench/cpu_read_bound.cpp). The op's own count per vector: Hq / Hkv multiply-adds for each of
  // the 4 / e cached elements per f32 lane, 8 for bf16.
  if (dev.type == xhal::DeviceType::cpu) {
    const int64_t block = 16, num_blocks = s.paged_batch * (s.paged_ctx / block);
    const int64_t block_bytes = block * Hkv * D * int64_t(e);
    for (int fmas : {0, 2, 4, 8}) {
      for (bool prefetch : {false, true}) {
        add(fmt::format("read_bound/B{}_Hq{}_Hkv{}_ctx{}_D{}/fmas:{}/prefetch:{}/{}", s.paged_batch, Hq, Hkv,
                        s.paged_ctx, D, fmas, int(prefetch), tn),
            2.0 * double(num_blocks * block_bytes), 0, Bound::memory, [=] {
              std::vector<int32_t> table(static_cast<size_t>(num_blocks));
              std::iota(table.begin(), table.end(), 0);
              std::shuffle(table.begin(), table.end(), std::mt19937(7));
              Tensor kc = random_tensor({num_blocks, block, Hkv, D}, dt, dev);
              Tensor vc = random_tensor({num_blocks, block, Hkv, D}, dt, dev);
              std::vector<const char*> order;
              for (int32_t b : table) {
                for (const Tensor* cache : {&kc, &vc}) {
                  order.push_back(static_cast<const char*>(cache->data()) + b * block_bytes);
                }
              }
              return std::function<void()>([=] {
                benchmark::DoNotOptimize(
                    xhal_bench::read_blocks(order.data(), int64_t(order.size()), block_bytes, fmas, prefetch));
                (void)kc, (void)vc;  // the cache lives as long as the call
              });
            });
      }
    }
  }
#endif
  // One long sequence (one user's long document): all parallelism comes from splitting its keys.
  add_paged(1, s.paged_long_ctx, false);
  // One short sequence (one user's chat turn): a latency case, its cache resident after the first
  // call; keys must still be split for every thread to have a share.
  add_paged(1, 1024, false);

  // linear: x [m, k] against w [n, k], bound as the shape makes it.
  auto add_linear = [&](const std::string& kind, int64_t m, int64_t n, int64_t k, Bound bound) {
    add(fmt::format("{}/{}x{}x{}/{}", kind, m, n, k, tn), double(m * k + n * k + m * n) * e, 2.0 * m * n * k, bound,
        [=] {
          Tensor x = random_tensor({m, k}, dt, dev), w = random_tensor({n, k}, dt, dev);
          Tensor out = Tensor::empty({m, n}, dt, dev);
          return std::function<void()>([=] { xhal::ops::linear(x, w, nullptr, out); });
        });
  };
  add_linear("linear", s.linear_m, s.linear_n, s.linear_k, Bound::compute);
  // linear in decode: one token's row against a weight far larger than the caches (Llama-3-8B's
  // gate and up projections, 28672 x 4096), so a read of w at the memory's rate.
  add_linear("linear_decode", 1, s.decode_n, s.decode_k, Bound::memory);
  // linear_backward: dx = dout · w and dw = doutᵀ · x (4·m·n·k flops) plus dbias, a training
  // step's two GEMMs per linear; its ceiling is the linear (GEMM) rate.
  {
    const int64_t m = s.linear_m, n = s.linear_n, k = s.linear_k;
    add(fmt::format("linear_backward/{}x{}x{}/{}", m, n, k, tn), double(2 * m * k + 2 * n * k + m * n + n) * e,
        4.0 * m * n * k, Bound::compute, [=] {
          Tensor dout = random_tensor({m, n}, dt, dev), x = random_tensor({m, k}, dt, dev);
          Tensor w = random_tensor({n, k}, dt, dev), dx = Tensor::empty({m, k}, dt, dev);
          Tensor dw = Tensor::empty({n, k}, dt, dev), dbias = Tensor::empty({n}, dt, dev);
          return std::function<void()>([=] {
            const xhal::TensorView dx_view = dx, dw_view = dw, dbias_view = dbias;
            xhal::ops::linear_backward(dout, x, w, &dx_view, &dw_view, &dbias_view);
          });
        });
  }
  return cases;
}

// Takes xhal's own flags out of argv so Google Benchmark sees only its own.
Options parse_and_strip(int* argc, char** argv) {
  Options o;
  bool device_given = false;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= *argc) throw xhal::Error(xhal::Errc::invalid_argument, arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--device") {
      o.device = Device::parse(value());
      device_given = true;
    } else if (arg == "--dtype") {
      const std::string v = value();
      if (v == "f32")
        o.dtype = DType::f32;
      else if (v == "f16")
        o.dtype = DType::f16;
      else if (v == "bf16")
        o.dtype = DType::bf16;
      else
        throw xhal::Error(xhal::Errc::invalid_argument, "--dtype must be f32, f16 or bf16, got " + v);
    } else if (arg == "--quick") {
      o.quick = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  if (!device_given) o.device = xhal::DeviceManager::instance().default_device();
  if (!xhal::DeviceManager::instance().has_device(o.device)) {
    throw xhal::Error(xhal::Errc::backend_unavailable, "no device " + o.device.str() + " in this process");
  }
  return o;
}

int run(int argc, char** argv) {
  const Options opt = parse_and_strip(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const Shapes shapes = shapes_for(opt.device.type, opt.quick);
  auto& dm = xhal::DeviceManager::instance();

  // The ceilings first, once, so every op benchmark can report its fraction of them.
  const std::vector<Case> ceilings = ceiling_cases(shapes, opt.device, opt.dtype);
  g_ceilings.copy_gbps = ceilings[0].bytes / median_seconds(ceilings[0], opt.device, 11) * 1e-9;
  g_ceilings.gemm_tflops = ceilings[1].flops / median_seconds(ceilings[1], opt.device, 3) * 1e-12;
  if (opt.device.type == xhal::DeviceType::cpu) {  // paired with every op call (see Ceilings)
    g_ceilings.copy = ceilings[0].build(), g_ceilings.copy_bytes = ceilings[0].bytes;
    g_ceilings.gemm = ceilings[1].build(), g_ceilings.gemm_flops = ceilings[1].flops;
  }
  benchmark::AddCustomContext("xhal_device", opt.device.str() + " (" + dm.properties(opt.device).name + ")");
  benchmark::AddCustomContext("xhal_dtype", std::string(xhal::dtype_name(opt.dtype)));
  benchmark::AddCustomContext("xhal_ceiling_copy_GB/s", fmt::format("{:.2f}", g_ceilings.copy_gbps));
  benchmark::AddCustomContext("xhal_ceiling_gemm_TFLOP/s", fmt::format("{:.4f}", g_ceilings.gemm_tflops));

  // The ceiling benchmarks run again under Google Benchmark: their frac_* near 1 shows how steady
  // the up-front measurement was.
  std::vector<Case> cases = ceilings;
  for (Case& c : op_cases(shapes, opt.dtype, opt.device)) cases.push_back(std::move(c));
  for (const Case& c : cases) {
    benchmark::RegisterBenchmark(c.name.c_str(), [c, dev = opt.device](benchmark::State& st) { run_case(st, c, dev); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  prepared_state() = {};  // the last case's tensors go back to the allocator while it exists
  g_ceilings = {};
  benchmark::Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "xhal-bench: %s\n", e.what());
    return 2;
  }
}
