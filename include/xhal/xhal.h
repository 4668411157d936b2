/* The C API of xhal, for FFI users (Python ctypes, Rust, Go, ...). Tensors are DLPack DLTensors the
 * caller owns; devices are named by strings ("cpu", "cuda:0", "hip:1"). Every function returns an
 * xhal_status; on failure xhal_last_error() (per thread) holds the message. Nothing aborts.
 * `stream` arguments take a native stream (cudaStream_t, hipStream_t) or NULL for the device's
 * current stream. */
#ifndef XHAL_XHAL_H
#define XHAL_XHAL_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "xhal/status.h"
#include "xhal/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the loaded library ("0.2.0"); XHAL_VERSION_STRING is the one compiled against. */
const char* xhal_version(void);

/* The message of this thread's last failed call ("" if none). */
const char* xhal_last_error(void);

xhal_status xhal_device_count(int32_t* count);
/* Name of device i of xhal_device_count(), e.g. "cuda:0". */
xhal_status xhal_device_name(int32_t index, char* name, size_t name_len);
/* The device BACKEND_TYPE selects. */
xhal_status xhal_default_device(char* name, size_t name_len);

typedef struct xhal_memory_status {
  uint64_t free_bytes, total_bytes; /* from the driver */
  uint64_t allocated, reserved, peak_allocated, num_allocs, num_ooms; /* from xhal's allocator */
} xhal_memory_status;

xhal_status xhal_memory_status_get(const char* device, xhal_memory_status* status);
xhal_status xhal_empty_cache(const char* device);
xhal_status xhal_synchronize(const char* device);

typedef struct xhal_attention_params {
  float scale; /* 0 = 1/sqrt(head dim) */
  int32_t causal;
  int64_t window_left; /* -1 = none */
  int64_t window_right; /* -1 = none */
  float softcap; /* 0 = off */
} xhal_attention_params;

/* scale 0, not causal, no window, no softcap. */
xhal_attention_params xhal_attention_params_default(void);

/* Ops: see include/xhal/ops.hpp and docs/ops.md. Optional tensors (lse, bias) may be NULL. */
xhal_status xhal_attention(const DLTensor* q, const DLTensor* k, const DLTensor* v, const DLTensor* out,
                           const xhal_attention_params* params, const DLTensor* lse, void* stream);
xhal_status xhal_attention_varlen(const DLTensor* q, const DLTensor* k, const DLTensor* v, const DLTensor* cu_seqlens_q,
                                  const DLTensor* cu_seqlens_k, int64_t max_seqlen_q, int64_t max_seqlen_k,
                                  const DLTensor* out, const xhal_attention_params* params, const DLTensor* lse,
                                  void* stream);
xhal_status xhal_paged_attention(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                                 const DLTensor* block_table, const DLTensor* seq_lens, const DLTensor* out,
                                 const xhal_attention_params* params, void* stream);
xhal_status xhal_paged_prefill(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                               const DLTensor* cu_seqlens_q, const DLTensor* block_table, const DLTensor* seq_lens,
                               int64_t max_seqlen_q, const DLTensor* out, const xhal_attention_params* params,
                               const DLTensor* lse, void* stream);
/* fp8 and int8 quantization (docs/ops.md, quantize): granularity 0 per tensor, 1 per row, 2 per block of
 * `block` elements (op_table.h's xhal_quant_granularity); dynamic 1 computes and writes the scales
 * (quantize only). q is f8_e4m3, f8_e5m2 (DLPack codes 10 and 12, 8 bits) or int8 (symmetric, ±127). */
xhal_status xhal_quantize(const DLTensor* x, const DLTensor* q, const DLTensor* scale, int32_t granularity,
                          int64_t block, int32_t dynamic, void* stream);
xhal_status xhal_dequantize(const DLTensor* q, const DLTensor* scale, const DLTensor* out, int32_t granularity,
                            int64_t block, void* stream);
/* out = (x w^T) * x_scale * w_scale + bias: x [M,K], w [N,K] fp8 codes, scales f32 [1] or [rows, 1],
 * bias (may be NULL) and out f32, f16 or bf16 (docs/ops.md, linear_fp8). */
xhal_status xhal_linear_fp8(const DLTensor* x, const DLTensor* x_scale, const DLTensor* w, const DLTensor* w_scale,
                            const DLTensor* bias, const DLTensor* out, void* stream);
/* The same with int8 codes (DLPack kDLInt, 8 bits), summed exactly in int32; K <= 131071. */
xhal_status xhal_linear_int8(const DLTensor* x, const DLTensor* x_scale, const DLTensor* w, const DLTensor* w_scale,
                             const DLTensor* bias, const DLTensor* out, void* stream);
xhal_status xhal_rms_norm(const DLTensor* x, const DLTensor* weight, float eps, const DLTensor* out, void* stream);
xhal_status xhal_fused_add_rms_norm(const DLTensor* x, const DLTensor* residual, const DLTensor* weight, float eps,
                                    const DLTensor* out, void* stream);
/* bias optional (NULL). */
xhal_status xhal_layer_norm(const DLTensor* x, const DLTensor* weight, const DLTensor* bias, float eps,
                            const DLTensor* out, void* stream);
/* Over the last dim; out may be x. */
xhal_status xhal_softmax(const DLTensor* x, const DLTensor* out, void* stream);
/* y of x's shape or [N] (a row for every row of x); out may be x, or y when y has x's shape. */
xhal_status xhal_add(const DLTensor* x, const DLTensor* y, const DLTensor* out, void* stream);
xhal_status xhal_mul(const DLTensor* x, const DLTensor* y, const DLTensor* out, void* stream);
xhal_status xhal_swiglu(const DLTensor* gate, const DLTensor* up, const DLTensor* out, void* stream);
xhal_status xhal_swiglu_packed(const DLTensor* x, const DLTensor* out, void* stream);
/* out = gelu(gate) * up; approximation 0: exact (erf), 1: the tanh approximation. */
xhal_status xhal_gelu_and_mul(const DLTensor* gate, const DLTensor* up, const DLTensor* out, int32_t approximation,
                              void* stream);
xhal_status xhal_gelu_and_mul_packed(const DLTensor* x, const DLTensor* out, int32_t approximation, void* stream);
/* neox: 1 rotates halves, 0 rotates interleaved pairs (gptj). */
xhal_status xhal_rope(const DLTensor* q, const DLTensor* k, const DLTensor* positions, const DLTensor* cos_sin_cache,
                      int32_t neox, void* stream);
/* Fills out[max_pos, rotary_dim] (f32, on any device) with the rope cos/sin table. */
xhal_status xhal_rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, const DLTensor* out);
/* The same with the frequencies scaled for context extension (docs/ops.md): type 0 none, 1 linear,
 * 2 llama3, 3 yarn; the other fields as a Hugging Face config's "rope_scaling" names them. */
typedef struct xhal_rope_scaling {
  int32_t type;
  double factor;
  int64_t original_max_position_embeddings;
  double low_freq_factor, high_freq_factor; /* llama3 */
  double beta_fast, beta_slow; /* yarn */
  double attention_factor; /* yarn; 0: 0.1 ln(factor) + 1 */
} xhal_rope_scaling;
xhal_status xhal_rope_cache_scaled(int64_t max_pos, int64_t rotary_dim, double theta, const xhal_rope_scaling* scaling,
                                   const DLTensor* out);
xhal_status xhal_linear(const DLTensor* x, const DLTensor* w, const DLTensor* bias, const DLTensor* out, void* stream);
/* indices[...] (i32|i64) = argmax of each row of logits[..., V] (first on ties, NaN largest);
 * values (optional, NULL) = the row's largest value. */
xhal_status xhal_argmax(const DLTensor* logits, const DLTensor* indices, const DLTensor* values, void* stream);
/* values[..., k] and indices[..., k] (i32|i64) = the k largest of each row of x[..., V], largest
 * first (NaN largest; equal values by position), k from their last dim, at most XHAL_TOP_K_MAX_K. */
xhal_status xhal_top_k(const DLTensor* x, const DLTensor* values, const DLTensor* indices, void* stream);
/* tokens[B] (i32|i64) drawn from each row of logits[B, V] (docs/ops.md, sample): temperature
 * (0: greedy), top_k (0: off), top_p (1: off), min_p (0: off), Philox seed and step. params NULL:
 * temperature 1, no filter, seed and step 0. rows NULL, or per-row tensors ([B], each NULL or
 * f32 temperature/top_p/min_p, i32 top_k, i64 seeds/steps) replacing the scalars. */
typedef struct xhal_sample_params {
  float temperature;
  int64_t top_k;
  float top_p, min_p;
  uint64_t seed, step;
} xhal_sample_params;
typedef struct xhal_sample_rows {
  const DLTensor *temperature, *top_k, *top_p, *min_p, *seeds, *steps;
} xhal_sample_rows;
xhal_status xhal_sample(const DLTensor* logits, const DLTensor* tokens, const xhal_sample_params* params,
                        const xhal_sample_rows* rows, void* stream);

/* Gradients: see the Gradients section of docs/ops.md. */
xhal_status xhal_rms_norm_backward(const DLTensor* dout, const DLTensor* x, const DLTensor* weight, float eps,
                                   const DLTensor* dx, const DLTensor* dweight, void* stream);
xhal_status xhal_fused_add_rms_norm_backward(const DLTensor* dout, const DLTensor* residual, const DLTensor* weight,
                                             float eps, const DLTensor* dresidual, const DLTensor* dx,
                                             const DLTensor* dweight, void* stream);
xhal_status xhal_swiglu_backward(const DLTensor* dout, const DLTensor* gate, const DLTensor* up, const DLTensor* dgate,
                                 const DLTensor* dup, void* stream);
xhal_status xhal_swiglu_packed_backward(const DLTensor* dout, const DLTensor* x, const DLTensor* dx, void* stream);
xhal_status xhal_rope_backward(const DLTensor* dq, const DLTensor* dk, const DLTensor* positions,
                               const DLTensor* cos_sin_cache, int32_t neox, void* stream);
/* Per-token loss and lse of logits[T,V] against labels[T]; ignore_index -100 in PyTorch's usage,
 * label_smoothing and z_loss 0 for plain cross-entropy. */
xhal_status xhal_cross_entropy(const DLTensor* logits, const DLTensor* labels, const DLTensor* loss,
                               const DLTensor* lse, int64_t ignore_index, float label_smoothing, float z_loss,
                               void* stream);
xhal_status xhal_cross_entropy_backward(const DLTensor* logits, const DLTensor* labels, const DLTensor* lse,
                                        const DLTensor* dloss, const DLTensor* dlogits, int64_t ignore_index,
                                        float label_smoothing, float z_loss, void* stream);
/* One AdamW step over a list of `count` parameters (one dtype): params, grads, exp_avgs and
 * exp_avg_sqs are arrays of `count` rank-1 tensors; masters is NULL or such an array of f32 master
 * weights; lr and grad_scale may be NULL (then hyper->lr is used, and no scaling). */
typedef struct xhal_adamw_params {
  float lr, beta1, beta2, eps, weight_decay;
  int64_t step;
} xhal_adamw_params;
xhal_status xhal_adamw_step(size_t count, const DLTensor* const* params, const DLTensor* const* grads,
                            const DLTensor* const* exp_avgs, const DLTensor* const* exp_avg_sqs,
                            const DLTensor* const* masters, const DLTensor* lr, const DLTensor* grad_scale,
                            const xhal_adamw_params* hyper, void* stream);
/* The L2 norm of `count` gradients (an array of rank-1 tensors of one dtype) together: norm[1] f32;
 * clip_scale[1] f32 or NULL; max_norm <= 0: no clipping. */
xhal_status xhal_global_grad_norm(size_t count, const DLTensor* const* grads, const DLTensor* norm,
                                  const DLTensor* clip_scale, float max_norm, void* stream);

xhal_status xhal_attention_backward(const DLTensor* dout, const DLTensor* q, const DLTensor* k, const DLTensor* v,
                                    const DLTensor* out, const DLTensor* lse, const DLTensor* dq, const DLTensor* dk,
                                    const DLTensor* dv, const xhal_attention_params* params, void* stream);
xhal_status xhal_attention_varlen_backward(const DLTensor* dout, const DLTensor* q, const DLTensor* k,
                                           const DLTensor* v, const DLTensor* cu_seqlens_q,
                                           const DLTensor* cu_seqlens_k, int64_t max_seqlen_q, int64_t max_seqlen_k,
                                           const DLTensor* out, const DLTensor* lse, const DLTensor* dq,
                                           const DLTensor* dk, const DLTensor* dv, const xhal_attention_params* params,
                                           void* stream);
/* dx, dw and dbias may each be NULL (not computed); at least one is given. */
xhal_status xhal_linear_backward(const DLTensor* dout, const DLTensor* x, const DLTensor* w, const DLTensor* dx,
                                 const DLTensor* dw, const DLTensor* dbias, void* stream);

xhal_status xhal_embedding(const DLTensor* ids, const DLTensor* table, const DLTensor* out, void* stream);
/* padding_idx < 0: none. */
xhal_status xhal_embedding_backward(const DLTensor* ids, const DLTensor* dout, const DLTensor* dtable,
                                    int64_t padding_idx, void* stream);

/* Two attention results over disjoint key sets as one: out_a, out_b, out[T,H,D], lse_a, lse_b[H,T]
 * f32; lse[H,T] may be NULL. out may be out_a or out_b, lse may be lse_a or lse_b. */
xhal_status xhal_merge_attention_states(const DLTensor* out_a, const DLTensor* lse_a, const DLTensor* out_b,
                                        const DLTensor* lse_b, const DLTensor* out, const DLTensor* lse, void* stream);

/* k[T,Hkv,D], v[T,Hkv,Dv] into the paged caches at slot_mapping[T] (i32 or i64; negative: skip). */
xhal_status xhal_kv_cache_write(const DLTensor* k, const DLTensor* v, const DLTensor* slot_mapping,
                                const DLTensor* k_cache, const DLTensor* v_cache, void* stream);
/* The KV-cache functions over f8_e4m3 caches (DLPack code 10, 8 bits): k_scale and v_scale are f32,
 * [1] for the whole cache or [Hkv] one a kv head (docs/ops.md, "fp8 KV cache"); NULL both for a 16-
 * or 32-bit cache, where these equal the functions without _scaled. */
xhal_status xhal_kv_cache_write_scaled(const DLTensor* k, const DLTensor* v, const DLTensor* slot_mapping,
                                       const DLTensor* k_cache, const DLTensor* v_cache, const DLTensor* k_scale,
                                       const DLTensor* v_scale, void* stream);
xhal_status xhal_paged_attention_scaled(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                                        const DLTensor* block_table, const DLTensor* seq_lens, const DLTensor* out,
                                        const xhal_attention_params* params, const DLTensor* k_scale,
                                        const DLTensor* v_scale, void* stream);
xhal_status xhal_paged_prefill_scaled(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                                      const DLTensor* cu_seqlens_q, const DLTensor* block_table,
                                      const DLTensor* seq_lens, int64_t max_seqlen_q, const DLTensor* out,
                                      const xhal_attention_params* params, const DLTensor* lse, const DLTensor* k_scale,
                                      const DLTensor* v_scale, void* stream);

/* Deterministic mode (XHAL_DETERMINISTIC) on (1) or off (0) for this process. */
void xhal_set_deterministic(int32_t on);

#ifdef __cplusplus
}
#endif
#endif
