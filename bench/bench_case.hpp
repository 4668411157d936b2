// What xhal-bench's cases are made of, shared by the files that list them: the problem sizes per
// device type, a case (its setup, the bytes or flops a call moves, the ceiling it is a fraction
// of) and the tensors cases fill.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal::bench {

using xhal::Device;
using xhal::DType;
using xhal::Tensor;

// Problem sizes per device type. The CPU row keeps each benchmark within seconds on two cores with
// every tensor of a memory-bound op far beyond the last-level cache; the accelerator row is what
// serving a 8B-70B model looks like. --quick divides the token/sequence/row dimension by 8 for CI
// smoke runs; the copy keeps its size, since a copy that fits in the last-level cache (300 MiB on
// the GPU machines' hosts) would measure the cache instead.
struct Shapes {
  int64_t rows, hidden;  // rms_norm, fused_add_rms_norm, swiglu: [rows, hidden]
  int64_t rope_tokens;  // rope: q [T, 32, 128], k [T, 8, 128]
  std::vector<std::pair<int64_t, int64_t>>
      gradient_rows;  // the backward ops of the norms and swiglu: [rows, hidden] each
  int64_t ce_tokens, ce_vocab;  // cross_entropy: logits [tokens, vocab]
  int64_t optimizer_params;  // adamw_step, global_grad_norm: flat buffers of this many parameters
  int64_t attn_batch, attn_heads, attn_seq;  // attention (MHA), head dim kHeadDim
  std::vector<int64_t> varlen_seqs;  // attention_varlen: packed sequence lengths, causal
  int64_t paged_batch, paged_ctx;  // paged_attention: Hq 32, Hkv 8, block 16
  int64_t paged_long_ctx;  // paged_attention of one long sequence
  int64_t prefill_seqs, prefill_chunk;  // paged_prefill: chunks of new tokens, each its sequence's
      // last, at context paged_ctx (Hq 32, Hkv 8, blocks 16, 128)
  int64_t linear_m, linear_n, linear_k;
  int64_t decode_n, decode_k;  // linear_decode: one row of x against w [decode_n, decode_k]
  int64_t copy_mib;  // ceiling/copy: bytes of the source
  int64_t gemm_size;  // ceiling/gemm: f32 linear gemm_size^3
};

constexpr int64_t kHeadDim = 128;

// One benchmark: build() allocates and fills the inputs and returns the call to time (it owns the
// tensors); bytes/flops are per call. Bound says which ceiling the figure is a fraction of.
enum class Bound { memory, compute };
struct Case {
  std::string name;
  double bytes = 0, flops = 0;
  Bound bound = Bound::memory;
  std::function<std::function<void()>()> build;
};

// Fresh random values in [-1, 1) (never zeros: some kernels have fast paths for them).
Tensor random_tensor(const std::vector<int64_t>& shape, DType dtype, Device device);
// Values in [lo, hi) from a multiplicative hash of the index: fast enough for the optimizer's
// billion-element buffers, where the generator of random_tensor would take seconds per tensor.
Tensor hashed_tensor(int64_t n, DType dtype, Device device, float lo, float hi);
Tensor i32_tensor(const std::vector<int32_t>& values, const std::vector<int64_t>& shape, Device device);

// The training ops' cases (the norms' and swiglu's gradients, cross_entropy, embedding and
// the optimizer), appended to `cases`.
void add_training_cases(const Shapes& s, DType dt, Device dev, std::vector<Case>& cases);
// The serving ops' cases (merge_attention_states, kv_cache_write, argmax, softmax, add, mul),
// appended to `cases`.
void add_serving_cases(const Shapes& s, DType dt, Device dev, std::vector<Case>& cases);

}  // namespace xhal::bench
