// xhal-bench's cases of the serving ops: merge_attention_states, kv_cache_write, argmax, sample (and
// on the CPU its bound), top_k, quantize, dequantize, linear_fp8, linear_int8, softmax, add and mul.
#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "bench/bench_case.hpp"
#if defined(XHAL_BENCH_READ_BOUND)
#include "bench/cpu_read_bound.hpp"
#endif

namespace xhal::bench {

void add_serving_cases(const Shapes& s, DType dt, Device dev, std::vector<Case>& cases) {
  const double e = double(xhal::dtype_size(dt));
  const std::string tn(xhal::dtype_name(dt));
  const int64_t M = s.rows, N = s.hidden;
  const std::string mn = fmt::format("{}x{}", M, N);
  auto add = [&](std::string name, double bytes, double flops, Bound bound, auto build) {
    cases.push_back({std::move(name), bytes, flops, bound, build});
  };

  // merge_attention_states (a shared prefix's attention and the rest's, Llama-3 8B's 32 heads):
  // two outputs and their lse read, one of each written.
  {
    const int64_t T = s.rope_tokens, H = 32, D = kHeadDim;
    add(fmt::format("merge_attention_states/T{}_H{}_D{}/{}", T, H, D, tn), 3.0 * T * H * (D * e + 4.0), 0,
        Bound::memory, [=] {
          Tensor a = random_tensor({T, H, D}, dt, dev), b = random_tensor({T, H, D}, dt, dev);
          Tensor lse_a = random_tensor({H, T}, DType::f32, dev), lse_b = random_tensor({H, T}, DType::f32, dev);
          Tensor out = Tensor::empty({T, H, D}, dt, dev), lse = Tensor::empty({H, T}, DType::f32, dev);
          return std::function<void()>([=] {
            const xhal::TensorView lse_view = lse;
            xhal::ops::merge_attention_states(a, lse_a, b, lse_b, out, &lse_view);
          });
        });
  }

  // kv_cache_write (Llama-3 8B's 8 kv heads): a prefill batch's keys and values into a paged cache
  // of twice as many slots, blocks of 16 in shuffled order; the rows read once and written once
  // (as e4m3 codes, one byte each, into an fp8 cache with per-head scales).
  for (const bool fp8 : {false, true}) {
    const int64_t T = s.rope_tokens, Hkv = 8, D = kHeadDim, block_size = 16, blocks = 2 * T / block_size;
    add(fmt::format("kv_cache_write/T{}_Hkv{}_D{}{}/{}", T, Hkv, D, fp8 ? "_fp8cache" : "", tn),
        2.0 * T * Hkv * D * (e + (fp8 ? 1.0 : e)) + 4.0 * T, 0, Bound::memory, [=] {
          std::vector<int32_t> block_order(static_cast<size_t>(blocks)), slots(static_cast<size_t>(T));
          std::iota(block_order.begin(), block_order.end(), 0);
          std::shuffle(block_order.begin(), block_order.end(), std::mt19937(7));
          for (int64_t t = 0; t < T; ++t)
            slots[size_t(t)] = int32_t(block_order[size_t(t / block_size)] * block_size + t % block_size);
          Tensor k = random_tensor({T, Hkv, D}, dt, dev), v = random_tensor({T, Hkv, D}, dt, dev);
          Tensor slot_mapping = Tensor::from_host(slots.data(), {T}, DType::i32, dev);
          const DType cache_type = fp8 ? DType::f8_e4m3 : dt;
          Tensor k_cache = Tensor::empty({blocks, block_size, Hkv, D}, cache_type, dev);
          Tensor v_cache = Tensor::empty({blocks, block_size, Hkv, D}, cache_type, dev);
          const std::vector<float> scale_values(static_cast<size_t>(Hkv), 1.0f / 256);
          Tensor scales = Tensor::from_host(scale_values.data(), {Hkv}, DType::f32, dev);
          return std::function<void()>([=] {
            xhal::ops::kv_cache_write(
                k, v, slot_mapping, k_cache, v_cache,
                fp8 ? xhal::ops::KvCacheScales{&scales.view(), &scales.view()} : xhal::ops::KvCacheScales{});
          });
        });
  }

  // argmax (greedy decoding over Llama 3's vocabulary, one sequence and a batch of 64): the logits
  // read once, an index and a value written per row.
  for (const int64_t B : {int64_t(1), int64_t(64)}) {
    const int64_t V = 128256;
    add(fmt::format("argmax/B{}_V{}/{}", B, V, tn), double(B) * V * e + B * (8.0 + e), 0, Bound::memory, [=] {
      Tensor logits = random_tensor({B, V}, dt, dev);
      Tensor indices = Tensor::empty({B}, DType::i64, dev), values = Tensor::empty({B}, dt, dev);
      return std::function<void()>([=] {
        const xhal::TensorView v = values;
        xhal::ops::argmax(logits, indices, &v);
      });
    });
  }

  // sample with top-p 0.9 over Llama 3's vocabulary: the bound counts the logits read once (the
  // kernels read them from the cache several times more: max, the threshold's digits, the draw).
  for (const int64_t B : {int64_t(1), int64_t(64)}) {
    const int64_t V = 128256;
    add(fmt::format("sample/B{}_V{}_top_p/{}", B, V, tn), double(B) * V * e + B * 8.0, 0, Bound::memory, [=] {
      Tensor logits = random_tensor({B, V}, dt, dev);
      Tensor tokens = Tensor::empty({B}, DType::i64, dev);
      return std::function<void()>([=] { xhal::ops::sample(logits, tokens, {1.0f, 0, 0.9f, 0.0f, 1234, 0}); });
    });
  }

#if defined(XHAL_BENCH_READ_BOUND)
  // The CPU's bound for sample: the same logits, each row's largest value and its softmax
  // denominator and nothing else (bench/cpu_read_bound.cpp), what any exact temperature or top-p
  // sampler computes at least.
  if (dev.type == xhal::DeviceType::cpu && (dt == DType::bf16 || dt == DType::f32)) {
    for (const int64_t B : {int64_t(1), int64_t(64)}) {
      const int64_t V = 128256;
      add(fmt::format("read_bound/sample_B{}_V{}/{}", B, V, tn), double(B) * V * e + B * 8.0, 0, Bound::memory, [=] {
        Tensor logits = random_tensor({B, V}, dt, dev);
        return std::function<void()>([=] {
          benchmark::DoNotOptimize(xhal_bench::softmax_denominators(logits.data(), B, V, dt == DType::bf16));
        });
      });
    }
  }
#endif

  // top_k: the 50 largest logits of 64 rows of Llama 3's vocabulary (an engine's logprobs) and a
  // mixture of experts' routing (8 of 256 experts for 16384 tokens): x read once, k values and
  // i64 indices written per row.
  for (const auto& [B, V, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 128256, 50}, {16384, 256, 8}}) {
    add(fmt::format("top_k/B{}_V{}_k{}/{}", B, V, k, tn), double(B) * V * e + double(B) * k * (8.0 + e), 0,
        Bound::memory, [=] {
          Tensor x = random_tensor({B, V}, dt, dev);
          Tensor values = Tensor::empty({B, k}, dt, dev), indices = Tensor::empty({B, k}, DType::i64, dev);
          return std::function<void()>([=] { xhal::ops::top_k(x, values, indices); });
        });
  }

  // quantize to e4m3 with a dynamic scale a row (fp8 activations: per-token scales) and per block
  // of 128 (DeepSeek-style 1 x 128), and dequantize back: x read once, codes and scales written once.
  for (const auto granularity :
       {xhal::ops::QuantizeParams::Granularity::per_row, xhal::ops::QuantizeParams::Granularity::per_block}) {
    const bool per_row = granularity == xhal::ops::QuantizeParams::Granularity::per_row;
    const int64_t groups = per_row ? 1 : N / 128;
    add(fmt::format("quantize/{}_{}x{}_e4m3/{}", per_row ? "per_row" : "per_block128", M, N, tn),
        double(M) * N * (e + 1) + double(M) * groups * 4, 0, Bound::memory, [=] {
          Tensor x = random_tensor({M, N}, dt, dev), q = Tensor::empty({M, N}, DType::f8_e4m3, dev);
          Tensor scale = Tensor::empty({M, groups}, DType::f32, dev);
          return std::function<void()>([=] { xhal::ops::quantize(x, q, scale, {granularity, 128, true}); });
        });
  }
  add(fmt::format("dequantize/per_row_{}x{}_e4m3/{}", M, N, tn), double(M) * N * (e + 1) + double(M) * 4, 0,
      Bound::memory, [=] {
        Tensor x = random_tensor({M, N}, dt, dev), q = Tensor::empty({M, N}, DType::f8_e4m3, dev);
        Tensor scale = Tensor::empty({M, 1}, DType::f32, dev), out = Tensor::empty({M, N}, dt, dev);
        const xhal::ops::QuantizeParams per_row{xhal::ops::QuantizeParams::Granularity::per_row};
        xhal::ops::quantize(x, q, scale, per_row);
        return std::function<void()>([=] { xhal::ops::dequantize(q, scale, out, per_row); });
      });

  // linear_fp8 and linear_int8: e4m3 or int8 codes of x and w (quantized here once) with a scale a
  // row of each (per token, per channel) or one a tensor; their ceiling is the dtype's linear (GEMM)
  // rate, which 8-bit tensor cores exceed (twice the bf16 rate on Hopper).
  for (const DType format : {DType::f8_e4m3, DType::i8}) {
    for (const bool per_row : {true, false}) {
      const int64_t m = s.linear_m, n = s.linear_n, k = s.linear_k;
      const bool fp8 = format == DType::f8_e4m3;
      add(fmt::format("{}/{}x{}x{}_{}_{}/{}", fp8 ? "linear_fp8" : "linear_int8", m, n, k, fp8 ? "e4m3" : "i8",
                      per_row ? "per_row" : "per_tensor", tn),
          double(m * k + n * k) + double(m * n) * e, 2.0 * double(m) * double(n) * double(k), Bound::compute, [=] {
            const xhal::ops::QuantizeParams params{per_row ? xhal::ops::QuantizeParams::Granularity::per_row
                                                           : xhal::ops::QuantizeParams::Granularity::per_tensor};
            auto codes_of = [&](int64_t rows, Tensor& codes, Tensor& scale) {
              const Tensor values = random_tensor({rows, k}, dt, dev);
              codes = Tensor::empty({rows, k}, format, dev);
              scale = per_row ? Tensor::empty({rows, 1}, DType::f32, dev) : Tensor::empty({1}, DType::f32, dev);
              xhal::ops::quantize(values, codes, scale, params);
            };
            Tensor x, x_scale, w, w_scale;
            codes_of(m, x, x_scale);
            codes_of(n, w, w_scale);
            Tensor out = Tensor::empty({m, n}, dt, dev);
            return std::function<void()>([=] {
              (fp8 ? xhal::ops::linear_fp8 : xhal::ops::linear_int8)(x, x_scale, w, w_scale, nullptr, out, nullptr);
            });
          });
    }
  }

  // softmax over Llama 3's vocabulary for a batch of 64 (sampling's probabilities) and over rows
  // of the norms' shape: x read once, out written once.
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{64, 128256}, std::pair<int64_t, int64_t>{M, N}}) {
    add(fmt::format("softmax/{}x{}/{}", rows, cols, tn), 2.0 * double(rows) * double(cols) * e, 0, Bound::memory, [=] {
      Tensor x = random_tensor({rows, cols}, dt, dev), out = Tensor::empty({rows, cols}, dt, dev);
      return std::function<void()>([=] { xhal::ops::softmax(x, out); });
    });
  }

  // add with y of x's shape (x and y read, out written) and mul by a row (a scale: x read, out
  // written, the row read once).
  add("add/" + mn + "/" + tn, 3.0 * M * N * e, 0, Bound::memory, [=] {
    Tensor x = random_tensor({M, N}, dt, dev), y = random_tensor({M, N}, dt, dev);
    Tensor out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] { xhal::ops::add(x, y, out); });
  });
  add("mul/" + mn + "_row/" + tn, (2.0 * M * N + N) * e, 0, Bound::memory, [=] {
    Tensor x = random_tensor({M, N}, dt, dev), y = random_tensor({N}, dt, dev);
    Tensor out = Tensor::empty({M, N}, dt, dev);
    return std::function<void()>([=] { xhal::ops::mul(x, y, out); });
  });
}

}  // namespace xhal::bench
