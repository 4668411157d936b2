// Float64 reference ("golden") implementations of every xhal op, used by the conformance tests
// as the truth. They are written plainly and independently of the kernels: straight loops, full
// softmax over all keys, no blocking or tiling. Semantics follow docs/ops.md.
//
// Layout contract for every function: arrays are contiguous row-major std::vector<double>
// (integer arrays std::vector<int64_t>) in the shapes written next to each parameter. Sizes
// that disagree with the stated shape throw std::invalid_argument; nothing aborts.
// All functions are pure (except rope, which edits its argument) and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xhal::golden {

// Attention masking and scaling, as in xhal::AttentionParams.
// score = (q . k) * scale; if softcap > 0, score = softcap * tanh(score / softcap).
// Window sides of -1 mean "no limit" on that side.
struct AttentionMask {
  double scale;
  bool causal;
  int64_t window_left = -1, window_right = -1;
  double softcap = 0;
};

// Whether query row i of an Sq x Sk attention sees key j. Bottom-right aligned: with
// off = Sk - Sq, needs (!causal || j <= i+off), (window_left < 0 || j >= i+off-window_left),
// (window_right < 0 || j <= i+off+window_right).
bool key_visible(const AttentionMask& mask, int64_t i, int64_t j, int64_t Sq, int64_t Sk);

// out and lse of an attention call; lse is the natural log of the sum of exp(score) over the
// visible keys, -infinity for a row that sees no key (whose out row is all 0).
struct AttentionResult {
  std::vector<double> out;
  std::vector<double> lse;
};

// q[B,Sq,Hq,D], k[B,Sk,Hkv,D], v[B,Sk,Hkv,Dv] -> out[B,Sq,Hq,Dv], lse[B,Hq,Sq].
// Query head h reads kv head h / (Hq / Hkv); Hq % Hkv == 0.
AttentionResult attention(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                          int64_t B, int64_t Sq, int64_t Sk, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                          const AttentionMask& mask);

// Packed sequences: q[Tq,Hq,D], k[Tk,Hkv,D], v[Tk,Hkv,Dv], cu_seqlens_q[B+1], cu_seqlens_k[B+1]
// (non-decreasing, starting at 0, ending at Tq resp. Tk) -> out[Tq,Hq,Dv], lse[Hq,Tq].
// Sequence b is an independent attention over rows cu[b]..cu[b+1]-1, aligned on its own.
AttentionResult attention_varlen(const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<double>& v, const std::vector<int64_t>& cu_seqlens_q,
                                 const std::vector<int64_t>& cu_seqlens_k, int64_t Hq, int64_t Hkv, int64_t D,
                                 int64_t Dv, const AttentionMask& mask);

// Two attention results of the same queries over disjoint key sets as one: out_a, out_b[T,H,D],
// lse_a, lse_b[H,T] -> out[T,H,D], lse[H,T] with lse = log(e^lse_a + e^lse_b) and out = the parts
// weighted by e^(lse_part - lse). A part with lse -inf adds nothing (its out is not read); both
// -inf: out 0 and lse -inf. A NaN or +inf lse makes the row NaN.
AttentionResult merge_attention_states(const std::vector<double>& out_a, const std::vector<double>& lse_a,
                                       const std::vector<double>& out_b, const std::vector<double>& lse_b, int64_t T,
                                       int64_t H, int64_t D);

// The caches after writing new tokens: k[T,Hkv,D], v[T,Hkv,Dv], slots[T] (negative: skipped),
// k_cache[num_blocks,block_size,Hkv,D] and v_cache[...,Dv] as they were -> the same with token t's
// rows at slot slots[t] (block slot / block_size, row slot % block_size).
struct PagedCaches {
  std::vector<double> k_cache, v_cache;
};
PagedCaches kv_cache_write(const std::vector<double>& k, const std::vector<double>& v,
                           const std::vector<int64_t>& slots, std::vector<double> k_cache, std::vector<double> v_cache,
                           int64_t Hkv, int64_t D, int64_t Dv);

// One decode query per sequence: q[B,Hq,D], k_cache[num_blocks,block_size,Hkv,D],
// v_cache[num_blocks,block_size,Hkv,Dv], block_table[B,max_blocks], seq_lens[B] -> out[B,Hq,Dv].
// Sequence b (L = seq_lens[b]) attends keys 0..L-1 as attention with Sq=1, Sk=L; key j is slot
// j % block_size of block block_table[b][j / block_size]. L == 0 gives a zero row.
std::vector<double> paged_attention(const std::vector<double>& q, const std::vector<double>& k_cache,
                                    const std::vector<double>& v_cache, const std::vector<int64_t>& block_table,
                                    const std::vector<int64_t>& seq_lens, int64_t Hq, int64_t Hkv, int64_t D,
                                    int64_t Dv, int64_t block_size, const AttentionMask& mask);

// Several queries per sequence against the paged cache: q[Tq,Hq,D] packed by cu_seqlens_q[B+1]
// (starting at 0, non-decreasing, at most Tq), caches and block_table as paged_attention's,
// seq_lens[B] -> out[Tq,Hq,Dv], lse[Hq,Tq]. Sequence b is attention with Sq = its query rows and
// Sk = seq_lens[b] keys gathered from the cache (bottom-right aligned); rows past cu_seqlens_q[B]
// see no key (out 0, lse -inf).
AttentionResult paged_prefill(const std::vector<double>& q, const std::vector<double>& k_cache,
                              const std::vector<double>& v_cache, const std::vector<int64_t>& cu_seqlens_q,
                              const std::vector<int64_t>& block_table, const std::vector<int64_t>& seq_lens, int64_t Hq,
                              int64_t Hkv, int64_t D, int64_t Dv, int64_t block_size, const AttentionMask& mask);

// The code formats of quantize: OCP FP8 E4M3 (largest 448), E5M2 (largest 57344), symmetric int8
// (largest 127).
enum class QuantCodes { e4m3, e5m2, i8 };

// Quantization of x[M,N] in groups: `group` columns a group (N for a whole row), one group for
// the whole tensor when `per_tensor`. Dynamic: a group's scale is float(amax / largest) (1 for
// amax 0; NaN for a group holding one); else `scales` holds them (f32 values). codes: each
// element's value in the format nearest to the f32 product x * (1 / scale), ties to the even
// code, saturated at the largest; NaN for NaN in fp8, 0 in int8 (which has no NaN).
struct Quantized {
  std::vector<double> scales, values;
};
Quantized quantize(const std::vector<double>& x, int64_t N, int64_t group, bool per_tensor, QuantCodes format,
                   bool dynamic, std::vector<double> scales);

// linear_fp8 / a scaled GEMM: out[M,N] = (x[M,K] w[N,K]^T) * x_scale * w_scale + bias[N], a scale
// list of one element for the whole tensor, else one a row (M for x, N for w); bias may be empty.
std::vector<double> linear_scaled(const std::vector<double>& x, const std::vector<double>& x_scale,
                                  const std::vector<double>& w, const std::vector<double>& w_scale,
                                  const std::vector<double>& bias, int64_t M, int64_t N, int64_t K);

// linear_int8: the exact integer sums of x[M,K] w[N,K]^T (integer codes), then the op's defined f32
// epilogue fmaf(float(sum), float(x_scale) * float(w_scale), float(bias)) (docs/ops.md), as float
// values before the output's rounding; scale lists as linear_scaled's.
std::vector<double> linear_int8(const std::vector<double>& x, const std::vector<double>& x_scale,
                                const std::vector<double>& w, const std::vector<double>& w_scale,
                                const std::vector<double>& bias, int64_t M, int64_t N, int64_t K);

// x[M,N], weight[N] -> out[M,N] = x / sqrt(mean(x^2) + eps) * weight, per row.
std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& weight, double eps);

// x + y, or x y when `product`, element by element; y has x's size or is one row repeated over
// x's rows.
std::vector<double> elementwise(const std::vector<double>& x, const std::vector<double>& y, bool product);

// softmax over rows of N: exp(x - max) / sum(exp(x - max)), NaN in every entry of a row of -inf or
// one holding a NaN or +inf (as torch.softmax).
std::vector<double> softmax(const std::vector<double>& x, int64_t N);

// x[M,N], weight[N], bias[N] (empty: none) -> (x - mean) / sqrt(var + eps) * weight + bias per row,
// var the mean squared deviation.
std::vector<double> layer_norm(const std::vector<double>& x, const std::vector<double>& weight,
                               const std::vector<double>& bias, double eps);

struct FusedAddRmsNormResult {
  std::vector<double> out;  // [M,N] rms_norm(new_residual)
  std::vector<double> residual;  // [M,N] x + residual
};

// x[M,N], residual[M,N], weight[N] -> {rms_norm(x + residual), x + residual}.
FusedAddRmsNormResult fused_add_rms_norm(const std::vector<double>& x, const std::vector<double>& residual,
                                         const std::vector<double>& weight, double eps);

// gate[M,N], up[M,N] -> out[M,N] = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
std::vector<double> swiglu(const std::vector<double>& gate, const std::vector<double>& up);

// x[M,2N] -> out[M,N]: gate = first N of each row, up = last N.
std::vector<double> swiglu_packed(const std::vector<double>& x, int64_t N);
// out = gelu(gate) * up: exact (erf), or the tanh approximation when `tanh`; packed as swiglu's.
std::vector<double> gelu_and_mul(const std::vector<double>& gate, const std::vector<double>& up, bool tanh);
std::vector<double> gelu_and_mul_packed(const std::vector<double>& x, int64_t N, bool tanh);

// -> cache[max_pos, rotary_dim]; with f_i = theta^(-2i/rotary_dim), i < rotary_dim/2,
// row p = [cos(p f_0) .. cos(p f_{r/2-1}), sin(p f_0) .. sin(p f_{r/2-1})]. rotary_dim even.
std::vector<double> rope_cache(int64_t max_pos, int64_t rotary_dim, double theta);

// logits[M,V] -> the position of each row's largest value: the first on ties, and the first NaN
// where a row has one (NaN above every number, as torch.argmax).
std::vector<int64_t> argmax(const std::vector<double>& logits, int64_t V);

// top_k: each row's k positions of logits[M,V], largest value first, NaN above every number and
// equal values by position ([M,k], row-major).
std::vector<int64_t> top_k(const std::vector<double>& logits, int64_t V, int64_t k);

// sample's distribution over one row of logits (finite, at least one > -inf), float64: weights
// exp((x - max) / temperature); top_k keeps the logits >= the k-th largest (0: off); top_p the
// fewest largest logits (ties together) whose weights reach top_p of the top-k ones' (1: off);
// min_p the weights >= min_p (the largest weight is 1). p: each token's probability, 0 for dropped
// ones; borderline: tokens whose keeping f32 arithmetic may decide either way.
struct SampleSettings {
  double temperature = 1;
  int64_t top_k = 0;
  double top_p = 1, min_p = 0;
};
struct SampleDistribution {
  std::vector<double> p;
  std::vector<bool> borderline;
};
SampleDistribution sample_distribution(const std::vector<double>& logits, const SampleSettings& settings);

// The same with Hugging Face's "rope_scaling" (transformers' rope initialisation functions, in
// their vector form): type "linear", "llama3" or "yarn". attention_factor 0: yarn's default.
struct RopeScaling {
  std::string type;
  double factor = 1;
  int64_t original_max_position = 0;
  double low_freq_factor = 1, high_freq_factor = 4, beta_fast = 32, beta_slow = 1, attention_factor = 0;
};
std::vector<double> rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, const RopeScaling& scaling);

// In place on x[T,H,D], T = positions.size(), with cache[max_pos, rotary_dim] from rope_cache.
// Rotates the first rotary_dim features of each head by c = cache[p][i], s = cache[p][r/2+i]:
// (a, b) -> (a c - b s, b c + a s), where (a, b) = (x[i], x[i+r/2]) if neox,
// (x[2i], x[2i+1]) otherwise (gptj). Features >= rotary_dim are unchanged.
void rope(std::vector<double>& x, const std::vector<int64_t>& positions, int64_t H, int64_t D,
          const std::vector<double>& cache, int64_t rotary_dim, bool neox);

// x[M,K], w[N,K], bias[N] or empty -> out[M,N] = x @ w^T + bias.
std::vector<double> linear(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& bias,
                           int64_t M, int64_t N, int64_t K);

// table[V,D], ids[T] in 0..V-1 -> out[T,D] = the rows ids picks.
std::vector<double> embedding(const std::vector<int64_t>& ids, const std::vector<double>& table, int64_t D);

struct CrossEntropyResult {
  std::vector<double> loss, lse;  // [T] each
};

// logits[T,V], labels[T] -> per token lse = log(sum_j exp(x_j)) (NaN if any logit is NaN, -inf if
// all are -inf) and loss = (1 - s)(lse - x[label]) + s (lse - mean_j x_j) + z lse^2, or 0 where
// label == ignore_index. Labels must be ignore_index or in 0..V-1.
CrossEntropyResult cross_entropy(const std::vector<double>& logits, const std::vector<int64_t>& labels, int64_t V,
                                 int64_t ignore_index, double label_smoothing, double z_loss);

}  // namespace xhal::golden
