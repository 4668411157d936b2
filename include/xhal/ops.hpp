// The fused ops. Every op validates its arguments for every backend before dispatch (Error with
// code invalid_argument naming the op and argument), then runs the best kernel registered for
// (op, backend of the output's device, dtype). Ops run on `stream` (default: the device's current
// stream); outputs are written in full. All math accumulates in f32. See docs/ops.md.
#pragma once

#include <cstdint>
#include <vector>

#include "xhal/stream.hpp"
#include "xhal/tensor.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal {

struct AttentionParams {
  float scale = 0.0f;  // 0 = 1/sqrt(head dim)
  bool causal = false;  // bottom-right aligned when Sq != Sk
  int64_t window_left = -1;  // keys more than this far left of the diagonal are masked; -1 = none
  int64_t window_right = -1;  // keys more than this far right of the diagonal are masked; -1 = none
  float softcap = 0.0f;  // scores become softcap * tanh(score / softcap); 0 = off
};

enum class RopeStyle { neox, gptj };

struct AdamWParams {
  float lr = 1e-3f;  // used when no lr tensor is given
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float weight_decay = 0.01f;  // decoupled: p *= 1 - lr * weight_decay
  int64_t step = 1;  // this update's number, from 1: bias corrections 1 - beta^step
};

// One parameter of a list update (adamw_step over a model's parameters) and its optimizer state:
// rank-1 views (a parameter tensor seen flat); master is null or f32 master weights.
struct AdamWTensors {
  TensorView param, grad, exp_avg, exp_avg_sq;
  const TensorView* master = nullptr;
};

struct CrossEntropyParams {
  int64_t ignore_index = -100;  // tokens with this label: loss 0, no gradient
  float label_smoothing = 0.0f;  // s in [0, 1]: the target is 1 - s on the label plus s / V on every class
  float z_loss = 0.0f;  // >= 0: adds z_loss * lse^2 to each token's loss
};

namespace ops {

// q[B,Sq,Hq,D], k[B,Sk,Hkv,D], v[B,Sk,Hkv,Dv] -> out[B,Sq,Hq,Dv]; lse[B,Hq,Sq] f32 (optional).
void attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
               const AttentionParams& params = {}, const TensorView* lse = nullptr, const Stream* stream = nullptr);

// Packed sequences: q[Tq,Hq,D], k[Tk,Hkv,D], v[Tk,Hkv,Dv], cu_seqlens_*[B+1] i32 -> out[Tq,Hq,Dv];
// lse[Hq,Tq] f32 (optional).
void attention_varlen(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& cu_seqlens_q,
                      const TensorView& cu_seqlens_k, int64_t max_seqlen_q, int64_t max_seqlen_k, const TensorView& out,
                      const AttentionParams& params = {}, const TensorView* lse = nullptr,
                      const Stream* stream = nullptr);

// Two attention results of the same queries over disjoint sets of keys (a shared prefix and the
// rest, or the halves of a split KV) as one: out_a, out_b, out[T,H,D] and lse_a, lse_b, lse[H,T]
// (f32, as attention_varlen writes them); out = (e^(lse_a - lse) out_a + e^(lse_b - lse) out_b),
// lse = log(e^lse_a + e^lse_b). A part with lse -inf (it saw no key) adds nothing; lse is optional,
// and out (lse) may be out_a or out_b (lse_a or lse_b) itself.
void merge_attention_states(const TensorView& out_a, const TensorView& lse_a, const TensorView& out_b,
                            const TensorView& lse_b, const TensorView& out, const TensorView* lse = nullptr,
                            const Stream* stream = nullptr);

// New tokens' keys and values into the paged cache: k[T,Hkv,D] and v[T,Hkv,Dv] of token t go to
// slot s = slot_mapping[t] (i32 or i64) of k_cache[num_blocks,block_size,Hkv,D] and
// v_cache[...,Dv], that is block s / block_size, row s % block_size; a negative slot skips the
// token (padding). Other slots are left as they are. A slot past the cache or used twice is
// invalid_argument on the CPU, which checks every one before writing; GPUs skip a slot past the
// cache, and of a slot used twice one of its tokens lands (docs/ops.md).
void kv_cache_write(const TensorView& k, const TensorView& v, const TensorView& slot_mapping, const TensorView& k_cache,
                    const TensorView& v_cache, const Stream* stream = nullptr);

// The scales of an fp8 KV cache (docs/ops.md, "fp8 KV cache"): f32, one for the whole cache ([1])
// or one a kv head ([Hkv]), separate for keys and values. A cached code c of kv head h stands for
// c * scale[h]; kv_cache_write stores the e4m3 code of x * (1 / scale[h]) (nearest, saturated at
// 448, as quantize). Both are required with f8_e4m3 caches and refused with any other.
struct KvCacheScales {
  const TensorView* k = nullptr;
  const TensorView* v = nullptr;
};

// kv_cache_write into an f8_e4m3 cache (k and v f32, f16 or bf16), or, with empty scales, as above.
void kv_cache_write(const TensorView& k, const TensorView& v, const TensorView& slot_mapping, const TensorView& k_cache,
                    const TensorView& v_cache, const KvCacheScales& scales, const Stream* stream = nullptr);

// One decode token per sequence: q[B,Hq,D], caches [num_blocks,block_size,Hkv,D|Dv],
// block_table[B,max_blocks] i32, seq_lens[B] i32 -> out[B,Hq,Dv].
void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const TensorView& block_table, const TensorView& seq_lens, const TensorView& out,
                     const AttentionParams& params = {}, const Stream* stream = nullptr);
// paged_attention over f8_e4m3 caches with their scales (KvCacheScales); q and out keep their dtype.
void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const TensorView& block_table, const TensorView& seq_lens, const TensorView& out,
                     const AttentionParams& params, const KvCacheScales& scales, const Stream* stream = nullptr);

// Several query tokens a sequence against the paged cache (chunked prefill, prefix caching,
// speculative verification): q[Tq,Hq,D] packed by cu_seqlens_q[B+1] (i32), caches and
// block_table[B,max_blocks] as paged_attention's, seq_lens[B] (i32) each sequence's length in the
// cache, its new tokens included (written by kv_cache_write first): sequence b's Sq new tokens are
// its last, at positions seq_lens[b] - Sq .. seq_lens[b] - 1, so the causal mask is attention's
// bottom-right one. -> out[Tq,Hq,Dv]; lse[Hq,Tq] f32 (optional). max_seqlen_q bounds every Sq.
void paged_prefill(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                   const TensorView& cu_seqlens_q, const TensorView& block_table, const TensorView& seq_lens,
                   int64_t max_seqlen_q, const TensorView& out, const AttentionParams& params = {},
                   const TensorView* lse = nullptr, const Stream* stream = nullptr);
// paged_prefill over f8_e4m3 caches with their scales (KvCacheScales); q, out and lse as above.
void paged_prefill(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                   const TensorView& cu_seqlens_q, const TensorView& block_table, const TensorView& seq_lens,
                   int64_t max_seqlen_q, const TensorView& out, const AttentionParams& params, const TensorView* lse,
                   const KvCacheScales& scales, const Stream* stream = nullptr);

// quantize's and dequantize's scale layout (docs/ops.md, quantize): one scale for the tensor
// (scale [1]), one a row (x's leading dims + [1]) or one a block of `block` elements of a row (x's
// leading dims + [ceil(N / block)]); scales are f32 and contiguous.
struct QuantizeParams {
  enum class Granularity { per_tensor, per_row, per_block };
  Granularity granularity = Granularity::per_tensor;
  int64_t block = 128;  // per_block: elements a scale covers along the last dim
  bool dynamic = true;  // quantize: each scale = its group's largest |x| / the format's largest, written
};

// q[..., N] (f8_e4m3, f8_e5m2 or i8) = x[..., N] (f32, f16, bf16) * (1 / scale), rounded to nearest
// even and saturated at the format's largest finite value (448, 57344, 127; int8 codes are
// symmetric, NaN gives 0). Dynamic: scale = amax / largest (1 where amax is 0), written to `scale`;
// static: `scale` is read.
void quantize(const TensorView& x, const TensorView& q, const TensorView& scale, const QuantizeParams& params = {},
              const Stream* stream = nullptr);
// out[..., N] (f32, f16, bf16) = q[..., N] (f8_e4m3, f8_e5m2 or i8) * scale, in f32, rounded once.
void dequantize(const TensorView& q, const TensorView& scale, const TensorView& out, const QuantizeParams& params = {},
                const Stream* stream = nullptr);

// out[M,N] (f32, f16, bf16) = (x[M,K] w[N,K]^T) * x_scale * w_scale + bias[N], x and w fp8 codes
// (f8_e4m3 or f8_e5m2, each its own) multiplied exactly and summed in f32. x_scale is [1] (per
// tensor) or [M,1] (per row, as quantize's per_row writes); w_scale [1] or [N,1] (per output
// channel); both f32. bias has out's dtype.
void linear_fp8(const TensorView& x, const TensorView& x_scale, const TensorView& w, const TensorView& w_scale,
                const TensorView* bias, const TensorView& out, const Stream* stream = nullptr);
// The same with int8 codes (i8, as quantize writes them): the products summed exactly in int32 (K
// up to XHAL_LINEAR_INT8_MAX_K), then out = fma(float(sum), x_scale * w_scale, bias) in f32, rounded
// once to out's dtype, so every backend gives the same bits.
void linear_int8(const TensorView& x, const TensorView& x_scale, const TensorView& w, const TensorView& w_scale,
                 const TensorView* bias, const TensorView& out, const Stream* stream = nullptr);

// out[...,N] = x / sqrt(mean(x^2) + eps) * weight[N].
void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& out,
              const Stream* stream = nullptr);

// residual = x + residual (in place); out = rms_norm(residual).
void fused_add_rms_norm(const TensorView& x, const TensorView& residual, const TensorView& weight, float eps,
                        const TensorView& out, const Stream* stream = nullptr);

// out = (x - mean) / sqrt(var + eps) * weight + bias (optional), mean and (biased) variance over
// the last dim, computed in f32.
void layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, float eps, const TensorView& out,
                const Stream* stream = nullptr);

// out = exp(x - max) / sum(exp(x - max)) over the last dim, in f32; out may be x itself. A row of
// -inf (every entry masked) or holding a NaN or +inf comes out NaN, as in torch.softmax.
void softmax(const TensorView& x, const TensorView& out, const Stream* stream = nullptr);

// out = x + y and out = x * y element by element, in f32 and rounded once; y is x's shape or y[N]
// with N x's last dim (one row for every row of x: a bias, a scale). out may be x, or y when y
// has x's shape.
void add(const TensorView& x, const TensorView& y, const TensorView& out, const Stream* stream = nullptr);
void mul(const TensorView& x, const TensorView& y, const TensorView& out, const Stream* stream = nullptr);

// out = silu(gate) * up.
void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, const Stream* stream = nullptr);
// x[...,2N]: gate = first half, up = second half; out[...,N].
void swiglu_packed(const TensorView& x, const TensorView& out, const Stream* stream = nullptr);

// GeGLU: out = gelu(gate) * up, gelu exact (erf) or its tanh approximation (GPT-2's, Gemma's
// gelu_pytorch_tanh).
enum class GeluApproximation : int32_t { erf = 0, tanh = 1 };  // xhal_gelu_approximation's values
void gelu_and_mul(const TensorView& gate, const TensorView& up, const TensorView& out,
                  GeluApproximation approximation = GeluApproximation::erf, const Stream* stream = nullptr);
// x[...,2N]: gate = first half, up = second half; out[...,N].
void gelu_and_mul_packed(const TensorView& x, const TensorView& out,
                         GeluApproximation approximation = GeluApproximation::erf, const Stream* stream = nullptr);

// In place on the first rotary_dim features of q[T,Hq,D] and k[T,Hkv,D]; positions[T] i32|i64;
// cos_sin_cache[max_pos, rotary_dim] f32 from rope_cache().
void rope(const TensorView& q, const TensorView& k, const TensorView& positions, const TensorView& cos_sin_cache,
          RopeStyle style, const Stream* stream = nullptr);

// cache[max_pos, rotary_dim] f32 on `device`: row p = [cos(p*f_i)..., sin(p*f_i)...],
// f_i = theta^(-2i/rotary_dim).
Tensor rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, Device device = Device::cpu());

// Context-extension scaling of the rope frequencies, with the fields of a Hugging Face config's
// "rope_scaling" (docs/ops.md, "rope, rope_cache"). Fields a type does not use are ignored.
struct RopeScaling {
  enum class Type { none, linear, llama3, yarn };
  Type type = Type::none;
  double factor = 1.0;  // linear, llama3, yarn: > 0
  int64_t original_max_position = 0;  // llama3, yarn: original_max_position_embeddings, > 0
  double low_freq_factor = 1.0;  // llama3
  double high_freq_factor = 4.0;  // llama3: > low_freq_factor
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn: rotations bounding the blend, beta_fast > beta_slow
  double attention_factor = 0.0;  // yarn: scales cos and sin; 0: 0.1 ln(factor) + 1 (1 if factor <= 1)
};
// The cache with f_i scaled: linear f_i / factor; llama3 Llama 3.1's wavelength bands; yarn
// YaRN's blend of f_i and f_i / factor by rotation count, cos and sin times attention_factor.
Tensor rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, const RopeScaling& scaling,
                  Device device = Device::cpu());

// Greedy decoding's pick: indices[...] (i32 or i64) = the position of each row's largest value of
// logits[..., V] (V >= 1), the first on ties; a NaN counts as larger than any number (the first
// NaN's position, as torch.argmax). values[...] (optional, logits' dtype): that value.
void argmax(const TensorView& logits, const TensorView& indices, const TensorView* values = nullptr,
            const Stream* stream = nullptr);

// The k largest values of each row of x[..., V] and their positions, largest first: values[..., k]
// (x's dtype, the elements themselves) and indices[..., k] (i32 or i64), both contiguous, k from
// their last dim (1 <= k <= min(V, XHAL_TOP_K_MAX_K)), V < 2^31. argmax's order: a NaN is larger than
// any number, and of equal values (-0 and +0 too) the lower position comes first, so values[..., 0]
// is argmax's (as torch.topk, with its ties settled).
void top_k(const TensorView& x, const TensorView& values, const TensorView& indices, const Stream* stream = nullptr);

// sample's settings for every row of a call (docs/ops.md, sample).
struct SampleParams {
  float temperature = 1.0f;  // 0: greedy (argmax); else >= 0 and finite
  int64_t top_k = 0;  // 0: off
  float top_p = 1.0f;  // in (0, 1]; 1: off
  float min_p = 0.0f;  // in [0, 1]; 0: off
  uint64_t seed = 0;  // a request's random stream: Philox's key
  uint64_t step = 0;  // the draw within it: Philox's counter
};
// Per-row settings ([B], contiguous, on logits' device), each replacing its SampleParams member for
// every row: temperature, top_p, min_p f32; top_k i32; seeds, steps i64. Null: the scalar.
struct SampleRowParams {
  const TensorView* temperature = nullptr;
  const TensorView* top_k = nullptr;
  const TensorView* top_p = nullptr;
  const TensorView* min_p = nullptr;
  const TensorView* seeds = nullptr;
  const TensorView* steps = nullptr;
};

// tokens[B] (i32 or i64) = one token drawn from each row of logits[B, V]: temperature, then top-k,
// top-p and min-p, then a draw from the kept tokens' weights with a counter-based random number
// (Philox4x32-10 keyed by the row's seed, counted by its step), so a request's tokens do not depend
// on the batch it runs in. Every backend computes the same token from the same logits.
void sample(const TensorView& logits, const TensorView& tokens, const SampleParams& params = {},
            const SampleRowParams& rows = {}, const Stream* stream = nullptr);

// out[M,N] = x[M,K] @ w[N,K]^T + bias[N] (optional).
void linear(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& out,
            const Stream* stream = nullptr);

// Backward ops. Each takes the gradient of its forward op's outputs (dout) and the forward's inputs,
// and writes the gradients of those inputs; a weight's gradient is reduced over every row in a
// fixed order (deterministic whatever the mode).

// Of rms_norm: dx[...,N] and dweight[N] from dout, x and weight (the row's rms is recomputed).
void rms_norm_backward(const TensorView& dout, const TensorView& x, const TensorView& weight, float eps,
                       const TensorView& dx, const TensorView& dweight, const Stream* stream = nullptr);

// Of fused_add_rms_norm. `residual` is the sum the forward left in it; `dresidual` holds on entry
// the gradient arriving on the residual stream (of the forward's residual output) and on return
// the gradient of the sum, which is also the gradient of the forward's x and of its residual input:
// dx gets the same values (dx may be dresidual itself). dweight[N] as for rms_norm_backward.
void fused_add_rms_norm_backward(const TensorView& dout, const TensorView& residual, const TensorView& weight,
                                 float eps, const TensorView& dresidual, const TensorView& dx,
                                 const TensorView& dweight, const Stream* stream = nullptr);

// Of swiglu: dgate = dout * up * silu'(gate), dup = dout * silu(gate).
void swiglu_backward(const TensorView& dout, const TensorView& gate, const TensorView& up, const TensorView& dgate,
                     const TensorView& dup, const Stream* stream = nullptr);
// Of swiglu_packed: dx[...,2N] = [dgate, dup] from dout[...,N] and x[...,2N].
void swiglu_packed_backward(const TensorView& dout, const TensorView& x, const TensorView& dx,
                            const Stream* stream = nullptr);

// Per-token loss[T] (f32) of logits[T,V] against labels[T] (i32|i64): lse - logits[label], with
// label smoothing and z-loss as set, 0 for ignored tokens; lse[T] (f32) gets each row's
// log-sum-exp, which cross_entropy_backward reads. The logits are read once, in their dtype (no f32
// copy). A label outside 0..V-1 (other than ignore_index): see docs/ops.md.
void cross_entropy(const TensorView& logits, const TensorView& labels, const TensorView& loss, const TensorView& lse,
                   const CrossEntropyParams& params = {}, const Stream* stream = nullptr);

// dlogits[T,V] = dloss[t] * d loss[t] / d logits[t,:] from the forward's lse; dlogits may be logits
// itself (in place: no second vocabulary-sized buffer). Ignored tokens get zero rows.
void cross_entropy_backward(const TensorView& logits, const TensorView& labels, const TensorView& lse,
                            const TensorView& dloss, const TensorView& dlogits, const CrossEntropyParams& params = {},
                            const Stream* stream = nullptr);

// One AdamW update (PyTorch's torch.optim.AdamW) of a list of parameters in one fused pass (one
// launch per few dozen tensors on a GPU). Each entry: param[N] (f32, f16 or bf16; one dtype for
// the whole list), grad[N] (param's dtype), exp_avg[N] and exp_avg_sq[N] (f32 moments), all
// updated in place. With master[N] (f32; every entry or none) the update is computed on the master
// weights and param gets them rounded. lr[1] (f32, optional) holds the learning rate on the device
// (a schedule that never leaves it); grad_scale[1] (f32, optional) multiplies the gradients first,
// e.g. the clip_scale of global_grad_norm, so that clipping costs no pass of its own. Each element
// of every buffer is read once and written once.
void adamw_step(const std::vector<AdamWTensors>& tensors, const TensorView* lr, const TensorView* grad_scale,
                const AdamWParams& params, const Stream* stream = nullptr);
// The same on one flat buffer (all parameters of one dtype in one tensor).
void adamw_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                const TensorView& exp_avg_sq, const TensorView* master, const TensorView* lr,
                const TensorView* grad_scale, const AdamWParams& params, const Stream* stream = nullptr);

// norm[1] (f32) = the L2 norm of all the gradients grads[i][N_i] together (one dtype), summed in f32
// in an order fixed by the lengths and the device; clip_scale[1] (f32, optional) =
// min(1, max_norm / (norm + 1e-6)), or 1 when max_norm <= 0: adamw_step's grad_scale for clipping
// by the global norm.
void global_grad_norm(const std::vector<TensorView>& grads, const TensorView& norm, const TensorView* clip_scale,
                      float max_norm, const Stream* stream = nullptr);
// The same over one flat gradient buffer.
void global_grad_norm(const TensorView& grad, const TensorView& norm, const TensorView* clip_scale, float max_norm,
                      const Stream* stream = nullptr);

// Of rope: rotates dq[T,Hq,D] and dk[T,Hkv,D] in place by the inverse angles (the transpose of the
// forward's rotation), with rope's positions, cache and style.
void rope_backward(const TensorView& dq, const TensorView& dk, const TensorView& positions,
                   const TensorView& cos_sin_cache, RopeStyle style, const Stream* stream = nullptr);

// out[T,D] = the rows of table[V,D] picked by ids[T] (i32|i64). An id outside 0..V-1:
// invalid_argument on the CPU (nothing written); on a GPU its row of out is NaN (docs/ops.md).
void embedding(const TensorView& ids, const TensorView& table, const TensorView& out, const Stream* stream = nullptr);

// Of embedding: dtable[V,D] = for each row v, the sum of dout[t] over the tokens with ids[t] == v
// (in token order: the same bits run to run on every backend), zero for rows no token picked and
// for padding_idx's (< 0: none). Written, not accumulated into.
void embedding_backward(const TensorView& ids, const TensorView& dout, const TensorView& dtable,
                        int64_t padding_idx = -1, const Stream* stream = nullptr);

// Of attention: dq[B,Sq,Hq,D], dk[B,Sk,Hkv,D], dv[B,Sk,Hkv,Dv] from dout[B,Sq,Hq,Dv] and the
// forward's q, k, v, out and lse[B,Hq,Sq] (f32), with the forward's params. GQA/MQA: dk and dv sum
// over the query heads of their group. Memory of the order of the inputs (no Sq x Sk buffer).
void attention_backward(const TensorView& dout, const TensorView& q, const TensorView& k, const TensorView& v,
                        const TensorView& out, const TensorView& lse, const TensorView& dq, const TensorView& dk,
                        const TensorView& dv, const AttentionParams& params = {}, const Stream* stream = nullptr);

// Of attention_varlen: as attention_backward over packed sequences (lse[Hq,Tq]).
void attention_varlen_backward(const TensorView& dout, const TensorView& q, const TensorView& k, const TensorView& v,
                               const TensorView& cu_seqlens_q, const TensorView& cu_seqlens_k, int64_t max_seqlen_q,
                               int64_t max_seqlen_k, const TensorView& out, const TensorView& lse, const TensorView& dq,
                               const TensorView& dk, const TensorView& dv, const AttentionParams& params = {},
                               const Stream* stream = nullptr);

// Of linear, from dout[M,N] and the forward's x[M,K] and w[N,K]: dx[M,K] = dout @ w,
// dw[N,K] = dout^T @ x and dbias[N] = dout summed over its rows. Each gradient is optional (null:
// not computed), at least one is given; they are written, not accumulated into.
void linear_backward(const TensorView& dout, const TensorView& x, const TensorView& w, const TensorView* dx,
                     const TensorView* dw, const TensorView* dbias, const Stream* stream = nullptr);

}  // namespace ops
}  // namespace xhal
