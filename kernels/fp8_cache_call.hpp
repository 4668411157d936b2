// The call a kernel over an f8_e4m3 KV cache hands on once it has dequantized the blocks the
// sequences read into a compact cache of q's dtype: the same paged_attention or paged_prefill call
// over that cache and a block table of its own, with q's dtype as the call's and no scales, run
// through the core's kernel choice (xhal_host_api.dispatch) so that the compute dtype's best kernel
// serves it. Host code shared by the CPU and GPU plugins.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernel_registration.hpp"
#include "xhal/op_table.h"
#include "xhal/plugin.h"

namespace xhal::kernels {

inline constexpr int kPagedTensorSlots = 11;  // the paged ops' highest slot (v_scale) + 1
static_assert(XHAL_PAGED_ATTENTION_K_CACHE == XHAL_PAGED_PREFILL_K_CACHE &&
              XHAL_PAGED_ATTENTION_V_CACHE == XHAL_PAGED_PREFILL_V_CACHE &&
              XHAL_PAGED_ATTENTION_K_SCALE == XHAL_PAGED_PREFILL_K_SCALE &&
              XHAL_PAGED_ATTENTION_V_SCALE == XHAL_PAGED_PREFILL_V_SCALE && XHAL_PAGED_PREFILL_V_SCALE + 1 == 11);

inline int block_table_slot(const xhal_op_call* c) {
  return c->op == XHAL_OP_PAGED_PREFILL ? XHAL_PAGED_PREFILL_BLOCK_TABLE : XHAL_PAGED_ATTENTION_BLOCK_TABLE;
}
inline int seq_lens_slot(const xhal_op_call* c) {
  return c->op == XHAL_OP_PAGED_PREFILL ? XHAL_PAGED_PREFILL_SEQ_LENS : XHAL_PAGED_ATTENTION_SEQ_LENS;
}

// The xhal dtype of a float tensor (f32, f16 or bf16, as the front ends allow for q).
inline xhal_dtype float_dtype_of(const DLTensor* t) {
  if (t->dtype.code == kDLBfloat) return XHAL_DTYPE_BF16;
  return t->dtype.bits == 16 ? XHAL_DTYPE_F16 : XHAL_DTYPE_F32;
}

// fn(E{}) with E the plugin's element type of `t`'s float dtype: the kernels whose call dtype is a
// storage type (f8_e4m3) pick the compute type from their float tensor.
template <class F32, class F16, class BF16, class Fn>
xhal_status with_float_element(const DLTensor* t, Fn&& fn) {
  switch (float_dtype_of(t)) {
    case XHAL_DTYPE_F32: return fn(F32{});
    case XHAL_DTYPE_F16: return fn(F16{});
    default: return fn(BF16{});
  }
}

// A scale list's entry for kv head h: [1] serves every head, [Hkv] one each.
inline int64_t scale_index(const DLTensor* scale, int64_t h) { return scale->shape[0] == 1 ? 0 : h; }

class DequantizedCacheCall {
 public:
  // blocks: the compact caches' block count; k, v: their data, contiguous [blocks, block_size, Hkv,
  // D | Dv] of q's dtype; table: int32 [B, max_blocks], contiguous.
  DequantizedCacheCall(const xhal_op_call* c, int64_t blocks, void* k, void* v, int32_t* table) : call_(*c) {
    const DLTensor* q = c->tensors[XHAL_PAGED_ATTENTION_Q];
    const DLTensor* table_in = c->tensors[block_table_slot(c)];
    fill_cache(&k_, k_shape_, k_strides_, c->tensors[XHAL_PAGED_ATTENTION_K_CACHE], blocks, k, q->dtype);
    fill_cache(&v_, v_shape_, v_strides_, c->tensors[XHAL_PAGED_ATTENTION_V_CACHE], blocks, v, q->dtype);
    table_ = *table_in;
    table_shape_[0] = table_in->shape[0], table_shape_[1] = table_in->shape[1];
    table_strides_[0] = table_in->shape[1], table_strides_[1] = 1;
    table_.data = table, table_.shape = table_shape_, table_.strides = table_strides_, table_.byte_offset = 0;
    for (int s = 0; s < kPagedTensorSlots; ++s) tensors_[s] = s < int(c->num_tensors) ? c->tensors[s] : nullptr;
    tensors_[XHAL_PAGED_ATTENTION_K_CACHE] = &k_;
    tensors_[XHAL_PAGED_ATTENTION_V_CACHE] = &v_;
    tensors_[block_table_slot(c)] = &table_;
    tensors_[XHAL_PAGED_ATTENTION_K_SCALE] = tensors_[XHAL_PAGED_ATTENTION_V_SCALE] = nullptr;
    call_.dtype = float_dtype_of(q);
    call_.num_tensors = kPagedTensorSlots;
    call_.tensors = tensors_;
  }
  DequantizedCacheCall(const DequantizedCacheCall&) = delete;
  DequantizedCacheCall& operator=(const DequantizedCacheCall&) = delete;

  xhal_status dispatch(char* msg, size_t len) const {
    const xhal_host_api* host = call_.host;
    if (host->struct_size < offsetof(xhal_host_api, dispatch) + sizeof host->dispatch || host->dispatch == nullptr) {
      return kernel_error(
          msg, len, XHAL_ERR_UNSUPPORTED,
          "an fp8 KV cache needs a core that dispatches calls for its plugins (xhal_host_api.dispatch)");
    }
    return host->dispatch(host->ctx, &call_, msg, len);
  }

 private:
  static void fill_cache(DLTensor* t, int64_t* shape, int64_t* strides, const DLTensor* from, int64_t blocks,
                         void* data, DLDataType dtype) {
    *t = *from;
    shape[0] = blocks;
    for (int d = 1; d < 4; ++d) shape[d] = from->shape[d];
    strides[3] = 1;
    for (int d = 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
    t->data = data, t->dtype = dtype, t->shape = shape, t->strides = strides, t->byte_offset = 0;
  }

  DLTensor k_{}, v_{}, table_{};
  int64_t k_shape_[4]{}, v_shape_[4]{}, k_strides_[4]{}, v_strides_[4]{}, table_shape_[2]{}, table_strides_[2]{};
  const DLTensor* tensors_[kPagedTensorSlots]{};
  xhal_op_call call_;
};

}  // namespace xhal::kernels
