/* The op table: every op xhal dispatches, its tensors and its scalar parameters, declared once.
 * The op enum, the tensor slot constants, the op and argument names the core prints, the shadow
 * check's copies and the test and bench op lists all expand these rows. Codes are the row order:
 * rows are only ever appended, so a plugin built against an older table keeps working.
 */
#ifndef XHAL_OP_TABLE_H
#define XHAL_OP_TABLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* OP(NAME, name, params): `params` is the struct xhal_op_call.params points at (NULL for void). */
#define XHAL_OPS(OP)                                                                 \
  OP(ATTENTION, attention, xhal_attention_op_params)                                 \
  OP(ATTENTION_VARLEN, attention_varlen, xhal_attention_op_params)                   \
  OP(PAGED_ATTENTION, paged_attention, xhal_attention_op_params)                     \
  OP(RMS_NORM, rms_norm, xhal_norm_op_params)                                        \
  OP(FUSED_ADD_RMS_NORM, fused_add_rms_norm, xhal_norm_op_params)                    \
  OP(SWIGLU, swiglu, void)                                                           \
  OP(SWIGLU_PACKED, swiglu_packed, void)                                             \
  OP(ROPE, rope, xhal_rope_op_params)                                                \
  OP(LINEAR, linear, void)                                                           \
  OP(RMS_NORM_BACKWARD, rms_norm_backward, xhal_norm_op_params)                      \
  OP(FUSED_ADD_RMS_NORM_BACKWARD, fused_add_rms_norm_backward, xhal_norm_op_params)  \
  OP(SWIGLU_BACKWARD, swiglu_backward, void)                                         \
  OP(SWIGLU_PACKED_BACKWARD, swiglu_packed_backward, void)                           \
  OP(ROPE_BACKWARD, rope_backward, xhal_rope_op_params)                              \
  OP(CROSS_ENTROPY, cross_entropy, xhal_cross_entropy_op_params)                     \
  OP(CROSS_ENTROPY_BACKWARD, cross_entropy_backward, xhal_cross_entropy_op_params)   \
  OP(ADAMW_STEP, adamw_step, xhal_adamw_op_params)                                   \
  OP(GLOBAL_GRAD_NORM, global_grad_norm, xhal_grad_norm_op_params)                   \
  OP(LINEAR_BACKWARD, linear_backward, void)                                         \
  OP(EMBEDDING, embedding, void)                                                     \
  OP(EMBEDDING_BACKWARD, embedding_backward, xhal_embedding_op_params)               \
  OP(ATTENTION_BACKWARD, attention_backward, xhal_attention_op_params)               \
  OP(ATTENTION_VARLEN_BACKWARD, attention_varlen_backward, xhal_attention_op_params) \
  OP(MERGE_ATTENTION_STATES, merge_attention_states, void)                           \
  OP(KV_CACHE_WRITE, kv_cache_write, void)                                           \
  OP(GELU_AND_MUL, gelu_and_mul, xhal_gelu_op_params)                                \
  OP(GELU_AND_MUL_PACKED, gelu_and_mul_packed, xhal_gelu_op_params)                  \
  OP(ARGMAX, argmax, void)                                                           \
  OP(LAYER_NORM, layer_norm, xhal_norm_op_params)                                    \
  OP(SOFTMAX, softmax, void)                                                         \
  OP(ADD, add, void)                                                                 \
  OP(MUL, mul, void)                                                                 \
  OP(SAMPLE, sample, xhal_sample_op_params)                                          \
  OP(TOP_K, top_k, void)                                                             \
  OP(PAGED_PREFILL, paged_prefill, xhal_attention_op_params)                         \
  OP(QUANTIZE, quantize, xhal_quantize_op_params)                                    \
  OP(DEQUANTIZE, dequantize, xhal_quantize_op_params)                                \
  OP(LINEAR_FP8, linear_fp8, void)                                                   \
  OP(LINEAR_INT8, linear_int8, void)

/* TENSOR(OP, NAME, name, slot, role, optional): an op's tensors in the order of its signature.
 * `slot` indexes xhal_op_call.tensors; the attention ops share q, k, v, out, lse at 0-4 (slot 4 is
 * NULL for paged_attention) so that one kernel can serve all three, and so do each forward op and
 * the others of its family (paged_prefill has attention_varlen's slots 0-5 and leaves
 * cu_seqlens_k's 6 empty, its block table and lengths at 7-8): rms_norm_backward and its fused form share dout, x|residual, weight,
 * dx, dweight at 0-4, the swiglu backward ops dout at 0, their input at 1 and its gradient at 3,
 * the gelu_and_mul ops swiglu's slots (one kernel serves the gated activations), and
 * rope_backward has rope's slots, linear_int8 linear_fp8's. cross_entropy_backward reads the forward's lse at the
 * forward's slot and its dloss at the forward's loss slot, embedding_backward its dout at the
 * forward's out slot; the attention backward ops read the forward's tensors at its slots (so the
 * forward kernels' row accessors serve them) and their gradients at 7-10. A backward op's
 * residual is the sum the forward left in it. An fp8 KV cache's scales follow its op's other
 * tensors (kv_cache_write 5-6, both paged ops 9-10, so one kernel serves them). The list ops (XHAL_OP_LISTS below) put the scalars
 * the whole list shares first and one entry's tensors after them.
 * Optional tensors are NULL when absent. */
#define XHAL_OP_TENSORS(TENSOR)                                                     \
  TENSOR(ATTENTION, Q, q, 0, XHAL_ROLE_IN, 0)                                       \
  TENSOR(ATTENTION, K, k, 1, XHAL_ROLE_IN, 0)                                       \
  TENSOR(ATTENTION, V, v, 2, XHAL_ROLE_IN, 0)                                       \
  TENSOR(ATTENTION, OUT, out, 3, XHAL_ROLE_OUT, 0)                                  \
  TENSOR(ATTENTION, LSE, lse, 4, XHAL_ROLE_OUT, 1)                                  \
  TENSOR(ATTENTION_VARLEN, Q, q, 0, XHAL_ROLE_IN, 0)                                \
  TENSOR(ATTENTION_VARLEN, K, k, 1, XHAL_ROLE_IN, 0)                                \
  TENSOR(ATTENTION_VARLEN, V, v, 2, XHAL_ROLE_IN, 0)                                \
  TENSOR(ATTENTION_VARLEN, CU_SEQLENS_Q, cu_seqlens_q, 5, XHAL_ROLE_IN, 0)          \
  TENSOR(ATTENTION_VARLEN, CU_SEQLENS_K, cu_seqlens_k, 6, XHAL_ROLE_IN, 0)          \
  TENSOR(ATTENTION_VARLEN, OUT, out, 3, XHAL_ROLE_OUT, 0)                           \
  TENSOR(ATTENTION_VARLEN, LSE, lse, 4, XHAL_ROLE_OUT, 1)                           \
  TENSOR(PAGED_ATTENTION, Q, q, 0, XHAL_ROLE_IN, 0)                                 \
  TENSOR(PAGED_ATTENTION, K_CACHE, k_cache, 1, XHAL_ROLE_IN, 0)                     \
  TENSOR(PAGED_ATTENTION, V_CACHE, v_cache, 2, XHAL_ROLE_IN, 0)                     \
  TENSOR(PAGED_ATTENTION, BLOCK_TABLE, block_table, 5, XHAL_ROLE_IN, 0)             \
  TENSOR(PAGED_ATTENTION, SEQ_LENS, seq_lens, 6, XHAL_ROLE_IN, 0)                   \
  TENSOR(PAGED_ATTENTION, OUT, out, 3, XHAL_ROLE_OUT, 0)                            \
  TENSOR(PAGED_ATTENTION, K_SCALE, k_scale, 9, XHAL_ROLE_IN, 1)                     \
  TENSOR(PAGED_ATTENTION, V_SCALE, v_scale, 10, XHAL_ROLE_IN, 1)                    \
  TENSOR(RMS_NORM, X, x, 0, XHAL_ROLE_IN, 0)                                        \
  TENSOR(RMS_NORM, WEIGHT, weight, 1, XHAL_ROLE_IN, 0)                              \
  TENSOR(RMS_NORM, OUT, out, 2, XHAL_ROLE_OUT, 0)                                   \
  TENSOR(FUSED_ADD_RMS_NORM, X, x, 0, XHAL_ROLE_IN, 0)                              \
  TENSOR(FUSED_ADD_RMS_NORM, RESIDUAL, residual, 3, XHAL_ROLE_INOUT, 0)             \
  TENSOR(FUSED_ADD_RMS_NORM, WEIGHT, weight, 1, XHAL_ROLE_IN, 0)                    \
  TENSOR(FUSED_ADD_RMS_NORM, OUT, out, 2, XHAL_ROLE_OUT, 0)                         \
  TENSOR(SWIGLU, GATE, gate, 0, XHAL_ROLE_IN, 0)                                    \
  TENSOR(SWIGLU, UP, up, 1, XHAL_ROLE_IN, 0)                                        \
  TENSOR(SWIGLU, OUT, out, 2, XHAL_ROLE_OUT, 0)                                     \
  TENSOR(SWIGLU_PACKED, X, x, 0, XHAL_ROLE_IN, 0)                                   \
  TENSOR(SWIGLU_PACKED, OUT, out, 2, XHAL_ROLE_OUT, 0)                              \
  TENSOR(ROPE, Q, q, 0, XHAL_ROLE_INOUT, 0)                                         \
  TENSOR(ROPE, K, k, 1, XHAL_ROLE_INOUT, 0)                                         \
  TENSOR(ROPE, POSITIONS, positions, 2, XHAL_ROLE_IN, 0)                            \
  TENSOR(ROPE, COS_SIN_CACHE, cos_sin_cache, 3, XHAL_ROLE_IN, 0)                    \
  TENSOR(LINEAR, X, x, 0, XHAL_ROLE_IN, 0)                                          \
  TENSOR(LINEAR, W, w, 1, XHAL_ROLE_IN, 0)                                          \
  TENSOR(LINEAR, BIAS, bias, 2, XHAL_ROLE_IN, 1)                                    \
  TENSOR(LINEAR, OUT, out, 3, XHAL_ROLE_OUT, 0)                                     \
  TENSOR(RMS_NORM_BACKWARD, DOUT, dout, 0, XHAL_ROLE_IN, 0)                         \
  TENSOR(RMS_NORM_BACKWARD, X, x, 1, XHAL_ROLE_IN, 0)                               \
  TENSOR(RMS_NORM_BACKWARD, WEIGHT, weight, 2, XHAL_ROLE_IN, 0)                     \
  TENSOR(RMS_NORM_BACKWARD, DX, dx, 3, XHAL_ROLE_OUT, 0)                            \
  TENSOR(RMS_NORM_BACKWARD, DWEIGHT, dweight, 4, XHAL_ROLE_OUT, 0)                  \
  TENSOR(FUSED_ADD_RMS_NORM_BACKWARD, DOUT, dout, 0, XHAL_ROLE_IN, 0)               \
  TENSOR(FUSED_ADD_RMS_NORM_BACKWARD, RESIDUAL, residual, 1, XHAL_ROLE_IN, 0)       \
  TENSOR(FUSED_ADD_RMS_NORM_BACKWARD, WEIGHT, weight, 2, XHAL_ROLE_IN, 0)           \
  TENSOR(FUSED_ADD_RMS_NORM_BACKWARD, DRESIDUAL, dresidual, 5, XHAL_ROLE_INOUT, 0)  \
  TENSOR(FUSED_ADD_RMS_NORM_BACKWARD, DX, dx, 3, XHAL_ROLE_OUT, 0)                  \
  TENSOR(FUSED_ADD_RMS_NORM_BACKWARD, DWEIGHT, dweight, 4, XHAL_ROLE_OUT, 0)        \
  TENSOR(SWIGLU_BACKWARD, DOUT, dout, 0, XHAL_ROLE_IN, 0)                           \
  TENSOR(SWIGLU_BACKWARD, GATE, gate, 1, XHAL_ROLE_IN, 0)                           \
  TENSOR(SWIGLU_BACKWARD, UP, up, 2, XHAL_ROLE_IN, 0)                               \
  TENSOR(SWIGLU_BACKWARD, DGATE, dgate, 3, XHAL_ROLE_OUT, 0)                        \
  TENSOR(SWIGLU_BACKWARD, DUP, dup, 4, XHAL_ROLE_OUT, 0)                            \
  TENSOR(SWIGLU_PACKED_BACKWARD, DOUT, dout, 0, XHAL_ROLE_IN, 0)                    \
  TENSOR(SWIGLU_PACKED_BACKWARD, X, x, 1, XHAL_ROLE_IN, 0)                          \
  TENSOR(SWIGLU_PACKED_BACKWARD, DX, dx, 3, XHAL_ROLE_OUT, 0)                       \
  TENSOR(ROPE_BACKWARD, DQ, dq, 0, XHAL_ROLE_INOUT, 0)                              \
  TENSOR(ROPE_BACKWARD, DK, dk, 1, XHAL_ROLE_INOUT, 0)                              \
  TENSOR(ROPE_BACKWARD, POSITIONS, positions, 2, XHAL_ROLE_IN, 0)                   \
  TENSOR(ROPE_BACKWARD, COS_SIN_CACHE, cos_sin_cache, 3, XHAL_ROLE_IN, 0)           \
  TENSOR(CROSS_ENTROPY, LOGITS, logits, 0, XHAL_ROLE_IN, 0)                         \
  TENSOR(CROSS_ENTROPY, LABELS, labels, 1, XHAL_ROLE_IN, 0)                         \
  TENSOR(CROSS_ENTROPY, LOSS, loss, 2, XHAL_ROLE_OUT, 0)                            \
  TENSOR(CROSS_ENTROPY, LSE, lse, 3, XHAL_ROLE_OUT, 0)                              \
  TENSOR(CROSS_ENTROPY_BACKWARD, LOGITS, logits, 0, XHAL_ROLE_IN, 0)                \
  TENSOR(CROSS_ENTROPY_BACKWARD, LABELS, labels, 1, XHAL_ROLE_IN, 0)                \
  TENSOR(CROSS_ENTROPY_BACKWARD, LSE, lse, 3, XHAL_ROLE_IN, 0)                      \
  TENSOR(CROSS_ENTROPY_BACKWARD, DLOSS, dloss, 2, XHAL_ROLE_IN, 0)                  \
  TENSOR(CROSS_ENTROPY_BACKWARD, DLOGITS, dlogits, 4, XHAL_ROLE_OUT, 0)             \
  TENSOR(ADAMW_STEP, PARAM, param, 2, XHAL_ROLE_INOUT, 0)                           \
  TENSOR(ADAMW_STEP, GRAD, grad, 3, XHAL_ROLE_IN, 0)                                \
  TENSOR(ADAMW_STEP, EXP_AVG, exp_avg, 4, XHAL_ROLE_INOUT, 0)                       \
  TENSOR(ADAMW_STEP, EXP_AVG_SQ, exp_avg_sq, 5, XHAL_ROLE_INOUT, 0)                 \
  TENSOR(ADAMW_STEP, MASTER, master, 6, XHAL_ROLE_INOUT, 1)                         \
  TENSOR(ADAMW_STEP, LR, lr, 0, XHAL_ROLE_IN, 1)                                    \
  TENSOR(ADAMW_STEP, GRAD_SCALE, grad_scale, 1, XHAL_ROLE_IN, 1)                    \
  TENSOR(GLOBAL_GRAD_NORM, GRAD, grad, 2, XHAL_ROLE_IN, 0)                          \
  TENSOR(GLOBAL_GRAD_NORM, NORM, norm, 0, XHAL_ROLE_OUT, 0)                         \
  TENSOR(GLOBAL_GRAD_NORM, CLIP_SCALE, clip_scale, 1, XHAL_ROLE_OUT, 1)             \
  TENSOR(LINEAR_BACKWARD, DOUT, dout, 0, XHAL_ROLE_IN, 0)                           \
  TENSOR(LINEAR_BACKWARD, X, x, 1, XHAL_ROLE_IN, 0)                                 \
  TENSOR(LINEAR_BACKWARD, W, w, 2, XHAL_ROLE_IN, 0)                                 \
  TENSOR(LINEAR_BACKWARD, DX, dx, 3, XHAL_ROLE_OUT, 1)                              \
  TENSOR(LINEAR_BACKWARD, DW, dw, 4, XHAL_ROLE_OUT, 1)                              \
  TENSOR(LINEAR_BACKWARD, DBIAS, dbias, 5, XHAL_ROLE_OUT, 1)                        \
  TENSOR(EMBEDDING, IDS, ids, 0, XHAL_ROLE_IN, 0)                                   \
  TENSOR(EMBEDDING, TABLE, table, 1, XHAL_ROLE_IN, 0)                               \
  TENSOR(EMBEDDING, OUT, out, 2, XHAL_ROLE_OUT, 0)                                  \
  TENSOR(EMBEDDING_BACKWARD, IDS, ids, 0, XHAL_ROLE_IN, 0)                          \
  TENSOR(EMBEDDING_BACKWARD, DOUT, dout, 2, XHAL_ROLE_IN, 0)                        \
  TENSOR(EMBEDDING_BACKWARD, DTABLE, dtable, 3, XHAL_ROLE_OUT, 0)                   \
  TENSOR(ATTENTION_BACKWARD, DOUT, dout, 7, XHAL_ROLE_IN, 0)                        \
  TENSOR(ATTENTION_BACKWARD, Q, q, 0, XHAL_ROLE_IN, 0)                              \
  TENSOR(ATTENTION_BACKWARD, K, k, 1, XHAL_ROLE_IN, 0)                              \
  TENSOR(ATTENTION_BACKWARD, V, v, 2, XHAL_ROLE_IN, 0)                              \
  TENSOR(ATTENTION_BACKWARD, OUT, out, 3, XHAL_ROLE_IN, 0)                          \
  TENSOR(ATTENTION_BACKWARD, LSE, lse, 4, XHAL_ROLE_IN, 0)                          \
  TENSOR(ATTENTION_BACKWARD, DQ, dq, 8, XHAL_ROLE_OUT, 0)                           \
  TENSOR(ATTENTION_BACKWARD, DK, dk, 9, XHAL_ROLE_OUT, 0)                           \
  TENSOR(ATTENTION_BACKWARD, DV, dv, 10, XHAL_ROLE_OUT, 0)                          \
  TENSOR(ATTENTION_VARLEN_BACKWARD, DOUT, dout, 7, XHAL_ROLE_IN, 0)                 \
  TENSOR(ATTENTION_VARLEN_BACKWARD, Q, q, 0, XHAL_ROLE_IN, 0)                       \
  TENSOR(ATTENTION_VARLEN_BACKWARD, K, k, 1, XHAL_ROLE_IN, 0)                       \
  TENSOR(ATTENTION_VARLEN_BACKWARD, V, v, 2, XHAL_ROLE_IN, 0)                       \
  TENSOR(ATTENTION_VARLEN_BACKWARD, CU_SEQLENS_Q, cu_seqlens_q, 5, XHAL_ROLE_IN, 0) \
  TENSOR(ATTENTION_VARLEN_BACKWARD, CU_SEQLENS_K, cu_seqlens_k, 6, XHAL_ROLE_IN, 0) \
  TENSOR(ATTENTION_VARLEN_BACKWARD, OUT, out, 3, XHAL_ROLE_IN, 0)                   \
  TENSOR(ATTENTION_VARLEN_BACKWARD, LSE, lse, 4, XHAL_ROLE_IN, 0)                   \
  TENSOR(ATTENTION_VARLEN_BACKWARD, DQ, dq, 8, XHAL_ROLE_OUT, 0)                    \
  TENSOR(ATTENTION_VARLEN_BACKWARD, DK, dk, 9, XHAL_ROLE_OUT, 0)                    \
  TENSOR(ATTENTION_VARLEN_BACKWARD, DV, dv, 10, XHAL_ROLE_OUT, 0)                   \
  TENSOR(MERGE_ATTENTION_STATES, OUT_A, out_a, 0, XHAL_ROLE_IN, 0)                  \
  TENSOR(MERGE_ATTENTION_STATES, LSE_A, lse_a, 1, XHAL_ROLE_IN, 0)                  \
  TENSOR(MERGE_ATTENTION_STATES, OUT_B, out_b, 2, XHAL_ROLE_IN, 0)                  \
  TENSOR(MERGE_ATTENTION_STATES, LSE_B, lse_b, 3, XHAL_ROLE_IN, 0)                  \
  TENSOR(MERGE_ATTENTION_STATES, OUT, out, 4, XHAL_ROLE_OUT, 0)                     \
  TENSOR(MERGE_ATTENTION_STATES, LSE, lse, 5, XHAL_ROLE_OUT, 1)                     \
  TENSOR(KV_CACHE_WRITE, K, k, 0, XHAL_ROLE_IN, 0)                                  \
  TENSOR(KV_CACHE_WRITE, V, v, 1, XHAL_ROLE_IN, 0)                                  \
  TENSOR(KV_CACHE_WRITE, SLOT_MAPPING, slot_mapping, 2, XHAL_ROLE_IN, 0)            \
  TENSOR(KV_CACHE_WRITE, K_CACHE, k_cache, 3, XHAL_ROLE_INOUT, 0)                   \
  TENSOR(KV_CACHE_WRITE, V_CACHE, v_cache, 4, XHAL_ROLE_INOUT, 0)                   \
  TENSOR(KV_CACHE_WRITE, K_SCALE, k_scale, 5, XHAL_ROLE_IN, 1)                      \
  TENSOR(KV_CACHE_WRITE, V_SCALE, v_scale, 6, XHAL_ROLE_IN, 1)                      \
  TENSOR(GELU_AND_MUL, GATE, gate, 0, XHAL_ROLE_IN, 0)                              \
  TENSOR(GELU_AND_MUL, UP, up, 1, XHAL_ROLE_IN, 0)                                  \
  TENSOR(GELU_AND_MUL, OUT, out, 2, XHAL_ROLE_OUT, 0)                               \
  TENSOR(GELU_AND_MUL_PACKED, X, x, 0, XHAL_ROLE_IN, 0)                             \
  TENSOR(GELU_AND_MUL_PACKED, OUT, out, 2, XHAL_ROLE_OUT, 0)                        \
  TENSOR(ARGMAX, LOGITS, logits, 0, XHAL_ROLE_IN, 0)                                \
  TENSOR(ARGMAX, INDICES, indices, 1, XHAL_ROLE_OUT, 0)                             \
  TENSOR(ARGMAX, VALUES, values, 2, XHAL_ROLE_OUT, 1)                               \
  TENSOR(LAYER_NORM, X, x, 0, XHAL_ROLE_IN, 0)                                      \
  TENSOR(LAYER_NORM, WEIGHT, weight, 1, XHAL_ROLE_IN, 0)                            \
  TENSOR(LAYER_NORM, OUT, out, 2, XHAL_ROLE_OUT, 0)                                 \
  TENSOR(LAYER_NORM, BIAS, bias, 3, XHAL_ROLE_IN, 1)                                \
  TENSOR(SOFTMAX, X, x, 0, XHAL_ROLE_IN, 0)                                         \
  TENSOR(SOFTMAX, OUT, out, 1, XHAL_ROLE_OUT, 0)                                    \
  TENSOR(ADD, X, x, 0, XHAL_ROLE_IN, 0)                                             \
  TENSOR(ADD, Y, y, 1, XHAL_ROLE_IN, 0)                                             \
  TENSOR(ADD, OUT, out, 2, XHAL_ROLE_OUT, 0)                                        \
  TENSOR(MUL, X, x, 0, XHAL_ROLE_IN, 0)                                             \
  TENSOR(MUL, Y, y, 1, XHAL_ROLE_IN, 0)                                             \
  TENSOR(MUL, OUT, out, 2, XHAL_ROLE_OUT, 0)                                        \
  TENSOR(SAMPLE, LOGITS, logits, 0, XHAL_ROLE_IN, 0)                                \
  TENSOR(SAMPLE, TOKENS, tokens, 1, XHAL_ROLE_OUT, 0)                               \
  TENSOR(SAMPLE, TEMPERATURE, temperature, 2, XHAL_ROLE_IN, 1)                      \
  TENSOR(SAMPLE, TOP_K, top_k, 3, XHAL_ROLE_IN, 1)                                  \
  TENSOR(SAMPLE, TOP_P, top_p, 4, XHAL_ROLE_IN, 1)                                  \
  TENSOR(SAMPLE, MIN_P, min_p, 5, XHAL_ROLE_IN, 1)                                  \
  TENSOR(SAMPLE, SEEDS, seeds, 6, XHAL_ROLE_IN, 1)                                  \
  TENSOR(SAMPLE, STEPS, steps, 7, XHAL_ROLE_IN, 1)                                  \
  TENSOR(TOP_K, X, x, 0, XHAL_ROLE_IN, 0)                                           \
  TENSOR(TOP_K, VALUES, values, 1, XHAL_ROLE_OUT, 0)                                \
  TENSOR(TOP_K, INDICES, indices, 2, XHAL_ROLE_OUT, 0)                              \
  TENSOR(PAGED_PREFILL, Q, q, 0, XHAL_ROLE_IN, 0)                                   \
  TENSOR(PAGED_PREFILL, K_CACHE, k_cache, 1, XHAL_ROLE_IN, 0)                       \
  TENSOR(PAGED_PREFILL, V_CACHE, v_cache, 2, XHAL_ROLE_IN, 0)                       \
  TENSOR(PAGED_PREFILL, OUT, out, 3, XHAL_ROLE_OUT, 0)                              \
  TENSOR(PAGED_PREFILL, LSE, lse, 4, XHAL_ROLE_OUT, 1)                              \
  TENSOR(PAGED_PREFILL, CU_SEQLENS_Q, cu_seqlens_q, 5, XHAL_ROLE_IN, 0)             \
  TENSOR(PAGED_PREFILL, BLOCK_TABLE, block_table, 7, XHAL_ROLE_IN, 0)               \
  TENSOR(PAGED_PREFILL, SEQ_LENS, seq_lens, 8, XHAL_ROLE_IN, 0)                     \
  TENSOR(PAGED_PREFILL, K_SCALE, k_scale, 9, XHAL_ROLE_IN, 1)                       \
  TENSOR(PAGED_PREFILL, V_SCALE, v_scale, 10, XHAL_ROLE_IN, 1)                      \
  TENSOR(QUANTIZE, X, x, 0, XHAL_ROLE_IN, 0)                                        \
  TENSOR(QUANTIZE, Q, q, 1, XHAL_ROLE_OUT, 0)                                       \
  TENSOR(QUANTIZE, SCALE, scale, 2, XHAL_ROLE_INOUT, 0)                             \
  TENSOR(DEQUANTIZE, Q, q, 0, XHAL_ROLE_IN, 0)                                      \
  TENSOR(DEQUANTIZE, SCALE, scale, 1, XHAL_ROLE_IN, 0)                              \
  TENSOR(DEQUANTIZE, OUT, out, 2, XHAL_ROLE_OUT, 0)                                 \
  TENSOR(LINEAR_FP8, X, x, 0, XHAL_ROLE_IN, 0)                                      \
  TENSOR(LINEAR_FP8, X_SCALE, x_scale, 1, XHAL_ROLE_IN, 0)                          \
  TENSOR(LINEAR_FP8, W, w, 2, XHAL_ROLE_IN, 0)                                      \
  TENSOR(LINEAR_FP8, W_SCALE, w_scale, 3, XHAL_ROLE_IN, 0)                          \
  TENSOR(LINEAR_FP8, BIAS, bias, 4, XHAL_ROLE_IN, 1)                                \
  TENSOR(LINEAR_FP8, OUT, out, 5, XHAL_ROLE_OUT, 0)                                 \
  TENSOR(LINEAR_INT8, X, x, 0, XHAL_ROLE_IN, 0)                                     \
  TENSOR(LINEAR_INT8, X_SCALE, x_scale, 1, XHAL_ROLE_IN, 0)                         \
  TENSOR(LINEAR_INT8, W, w, 2, XHAL_ROLE_IN, 0)                                     \
  TENSOR(LINEAR_INT8, W_SCALE, w_scale, 3, XHAL_ROLE_IN, 0)                         \
  TENSOR(LINEAR_INT8, BIAS, bias, 4, XHAL_ROLE_IN, 1)                               \
  TENSOR(LINEAR_INT8, OUT, out, 5, XHAL_ROLE_OUT, 0)

/* LIST(OP, first, stride): ops over a list of tensors (every parameter of a model in one call).
 * The op's slots from `first` up are one entry's, `stride` of them; the rest are shared by the
 * whole list. A call with n >= 1 entries carries first + n * stride tensors, entry i's tensor of
 * slot s (s >= first) at s + i * stride (XHAL_LIST_SLOT); its num_tensors gives n. */
#define XHAL_OP_LISTS(LIST) \
  LIST(ADAMW_STEP, 2, 5)    \
  LIST(GLOBAL_GRAD_NORM, 2, 1)

#define XHAL_LIST_SLOT(slot, entry, stride) ((slot) + (entry) * (stride))

/* The most tensors one op has (a list op's with one entry); a new op with more raises it. */
#define XHAL_MAX_OP_TENSORS 16

/* linear_int8's contraction length bound: K products of int8 codes (|code| <= 128) summed in int32
 * cannot overflow. */
#define XHAL_LINEAR_INT8_MAX_K 131071

typedef enum xhal_tensor_role {
  XHAL_ROLE_IN = 0, /* read only */
  XHAL_ROLE_OUT = 1, /* written only */
  XHAL_ROLE_INOUT = 2 /* read, then written */
} xhal_tensor_role;

#define XHAL_OP_ENUM_ROW(NAME, name, params) XHAL_OP_##NAME,
typedef enum xhal_op { XHAL_OPS(XHAL_OP_ENUM_ROW) XHAL_OP_COUNT } xhal_op;
#undef XHAL_OP_ENUM_ROW

/* Slot constants: XHAL_ATTENTION_Q, XHAL_LINEAR_BIAS, ... */
#define XHAL_OP_SLOT_ROW(OP, NAME, name, slot, role, optional) XHAL_##OP##_##NAME = slot,
enum { XHAL_OP_TENSORS(XHAL_OP_SLOT_ROW) XHAL_SLOT_END_ };
#undef XHAL_OP_SLOT_ROW

/* List layouts: XHAL_ADAMW_STEP_LIST_FIRST, XHAL_ADAMW_STEP_LIST_STRIDE, ... */
#define XHAL_OP_LIST_ROW(OP, first, stride) XHAL_##OP##_LIST_FIRST = first, XHAL_##OP##_LIST_STRIDE = stride,
enum { XHAL_OP_LISTS(XHAL_OP_LIST_ROW) XHAL_LIST_END_ };
#undef XHAL_OP_LIST_ROW

/* Parameter structs. Each starts with its size: the core sets it to sizeof the struct it was
 * built with, and a kernel reads a member only when struct_size covers it (members are appended). */

typedef struct xhal_attention_op_params {
  uint32_t struct_size;
  float scale; /* softmax scale, already defaulted to 1/sqrt(head dim) */
  int32_t causal; /* bottom-right aligned causal mask */
  float softcap; /* 0 = off */
  int64_t window_left; /* -1 = unbounded */
  int64_t window_right; /* -1 = unbounded */
  int64_t max_seqlen_q, max_seqlen_k; /* attention_varlen */
} xhal_attention_op_params;

typedef struct xhal_norm_op_params {
  uint32_t struct_size;
  float eps;
} xhal_norm_op_params;

typedef enum xhal_rope_style {
  XHAL_ROPE_GPTJ = 0, /* rotates interleaved pairs */
  XHAL_ROPE_NEOX = 1 /* rotates halves */
} xhal_rope_style;

typedef struct xhal_rope_op_params {
  uint32_t struct_size;
  int32_t style; /* xhal_rope_style */
} xhal_rope_op_params;

typedef struct xhal_cross_entropy_op_params {
  uint32_t struct_size;
  int64_t ignore_index; /* tokens with this label have loss 0 and no gradient */
  float label_smoothing; /* 0 = off; the target puts 1 - s on the label and s / V on every class */
  float z_loss; /* 0 = off; adds z_loss * lse^2 to each token's loss */
} xhal_cross_entropy_op_params;

typedef struct xhal_adamw_op_params {
  uint32_t struct_size;
  float lr; /* used when the lr tensor is absent */
  float beta1, beta2, eps, weight_decay;
  int64_t step; /* 1 for the first step: bias corrections 1 - beta^step */
} xhal_adamw_op_params;

typedef struct xhal_embedding_op_params {
  uint32_t struct_size;
  int64_t padding_idx; /* tokens with this id add nothing to the gradient; < 0: none */
} xhal_embedding_op_params;

typedef enum xhal_gelu_approximation {
  XHAL_GELU_ERF = 0, /* x/2 (1 + erf(x / sqrt 2)), exact */
  XHAL_GELU_TANH = 1 /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
} xhal_gelu_approximation;

typedef struct xhal_gelu_op_params {
  uint32_t struct_size;
  int32_t approximation; /* xhal_gelu_approximation */
} xhal_gelu_op_params;

typedef struct xhal_grad_norm_op_params {
  uint32_t struct_size;
  float max_norm; /* clip_scale = min(1, max_norm / (norm + 1e-6)); <= 0: 1 */
} xhal_grad_norm_op_params;

/* sample's longest row: the integer weights of a row (2^40 each at most) sum to under 2^64. */
#define XHAL_SAMPLE_MAX_VOCABULARY 16777215

/* quantize's and dequantize's scales: one for the tensor ([1]), one a row (x's leading dims + [1])
 * or one a block of `block` elements of a row (x's leading dims + [ceil(N / block)]), f32. */
typedef enum xhal_quant_granularity {
  XHAL_QUANT_PER_TENSOR = 0,
  XHAL_QUANT_PER_ROW = 1,
  XHAL_QUANT_PER_BLOCK = 2
} xhal_quant_granularity;

typedef struct xhal_quantize_op_params {
  uint32_t struct_size;
  int32_t granularity; /* xhal_quant_granularity */
  int32_t dynamic; /* quantize: 1 computes each scale from its group's largest |x| (and writes it); 0 reads it */
  int64_t block; /* XHAL_QUANT_PER_BLOCK's block length, >= 1 */
} xhal_quantize_op_params;

/* top_k's largest k (the GPU kernels sort a row's candidates in shared memory). */
#define XHAL_TOP_K_MAX_K 4096

/* sample's settings for every row; a per-row tensor (slots TEMPERATURE .. STEPS) replaces its member. */
typedef struct xhal_sample_op_params {
  uint32_t struct_size;
  float temperature; /* <= 0: greedy (argmax) */
  int64_t top_k; /* <= 0 or >= V: off */
  float top_p; /* >= 1: off */
  float min_p; /* <= 0: off */
  uint64_t seed; /* Philox key */
  uint64_t step; /* Philox counter */
} xhal_sample_op_params;

#ifdef __cplusplus
}
#endif
#endif
