// The C API's quantization functions (quantize, dequantize, the fp8 and int8 linears, the KV-cache
// functions with an fp8 cache's scales), as the rest
// of xhal_c.cpp: DLTensors to views, the C++ API, exceptions to a status and a per-thread message.
#include "xhal/xhal.h"

#include "capi/c_call.hpp"
#include "xhal/xhal.hpp"

using namespace xhal::capi;  // NOLINT: the helpers every function of this file calls

extern "C" {

namespace {
// linear_fp8 and linear_int8 (one slot layout) through `run`.
using LinearQuantizedFn = void (*)(const xhal::TensorView&, const xhal::TensorView&, const xhal::TensorView&,
                                   const xhal::TensorView&, const xhal::TensorView*, const xhal::TensorView&,
                                   const xhal::Stream*);
xhal_status linear_quantized(xhal::Op op, LinearQuantizedFn run, const DLTensor* x, const DLTensor* x_scale,
                             const DLTensor* w, const DLTensor* w_scale, const DLTensor* bias, const DLTensor* out,
                             void* stream) {
  return guarded([&] {
    auto o = view(out, op, XHAL_LINEAR_FP8_OUT);
    auto b = optional_view(bias, op, XHAL_LINEAR_FP8_BIAS);
    auto s = stream_for(o, stream);
    run(view(x, op, XHAL_LINEAR_FP8_X), view(x_scale, op, XHAL_LINEAR_FP8_X_SCALE), view(w, op, XHAL_LINEAR_FP8_W),
        view(w_scale, op, XHAL_LINEAR_FP8_W_SCALE), ptr(b), o, ptr(s));
  });
}

// A C granularity code as QuantizeParams; a code outside the enum reaches the front end as is, which
// refuses it by name.
// The fp8 cache's scales of `op` at their slots (both null for a 16- or 32-bit cache).
struct CacheScales {
  std::optional<xhal::TensorView> k, v;
  CacheScales(const DLTensor* k_scale, const DLTensor* v_scale, xhal::Op op, int k_slot, int v_slot)
      : k(optional_view(k_scale, op, k_slot)), v(optional_view(v_scale, op, v_slot)) {}
  xhal::ops::KvCacheScales get() const { return {ptr(k), ptr(v)}; }
};

xhal::ops::QuantizeParams quantize_params(int32_t granularity, int64_t block, int32_t dynamic) {
  xhal::ops::QuantizeParams p;
  p.granularity = static_cast<xhal::ops::QuantizeParams::Granularity>(granularity);
  p.block = block;
  p.dynamic = dynamic != 0;
  return p;
}
}  // namespace

xhal_status xhal_quantize(const DLTensor* x, const DLTensor* q, const DLTensor* scale, int32_t granularity,
                          int64_t block, int32_t dynamic, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::quantize;
    auto xv = view(x, op, XHAL_QUANTIZE_X);
    auto s = stream_for(xv, stream);
    xhal::ops::quantize(xv, view(q, op, XHAL_QUANTIZE_Q), view(scale, op, XHAL_QUANTIZE_SCALE),
                        quantize_params(granularity, block, dynamic), ptr(s));
  });
}

xhal_status xhal_dequantize(const DLTensor* q, const DLTensor* scale, const DLTensor* out, int32_t granularity,
                            int64_t block, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::dequantize;
    auto o = view(out, op, XHAL_DEQUANTIZE_OUT);
    auto s = stream_for(o, stream);
    xhal::ops::dequantize(view(q, op, XHAL_DEQUANTIZE_Q), view(scale, op, XHAL_DEQUANTIZE_SCALE), o,
                          quantize_params(granularity, block, 0), ptr(s));
  });
}

xhal_status xhal_linear_fp8(const DLTensor* x, const DLTensor* x_scale, const DLTensor* w, const DLTensor* w_scale,
                            const DLTensor* bias, const DLTensor* out, void* stream) {
  return linear_quantized(xhal::Op::linear_fp8, &xhal::ops::linear_fp8, x, x_scale, w, w_scale, bias, out, stream);
}

xhal_status xhal_linear_int8(const DLTensor* x, const DLTensor* x_scale, const DLTensor* w, const DLTensor* w_scale,
                             const DLTensor* bias, const DLTensor* out, void* stream) {
  return linear_quantized(xhal::Op::linear_int8, &xhal::ops::linear_int8, x, x_scale, w, w_scale, bias, out, stream);
}

xhal_status xhal_kv_cache_write_scaled(const DLTensor* k, const DLTensor* v, const DLTensor* slot_mapping,
                                       const DLTensor* k_cache, const DLTensor* v_cache, const DLTensor* k_scale,
                                       const DLTensor* v_scale, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::kv_cache_write;
    auto kc = view(k_cache, op, XHAL_KV_CACHE_WRITE_K_CACHE);
    auto s = stream_for(kc, stream);
    const CacheScales scales(k_scale, v_scale, op, XHAL_KV_CACHE_WRITE_K_SCALE, XHAL_KV_CACHE_WRITE_V_SCALE);
    xhal::ops::kv_cache_write(view(k, op, XHAL_KV_CACHE_WRITE_K), view(v, op, XHAL_KV_CACHE_WRITE_V),
                              view(slot_mapping, op, XHAL_KV_CACHE_WRITE_SLOT_MAPPING), kc,
                              view(v_cache, op, XHAL_KV_CACHE_WRITE_V_CACHE), scales.get(), ptr(s));
  });
}

xhal_status xhal_paged_attention_scaled(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                                        const DLTensor* block_table, const DLTensor* seq_lens, const DLTensor* out,
                                        const xhal_attention_params* params, const DLTensor* k_scale,
                                        const DLTensor* v_scale, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::paged_attention;
    auto o = view(out, op, XHAL_PAGED_ATTENTION_OUT);
    auto s = stream_for(o, stream);
    const CacheScales scales(k_scale, v_scale, op, XHAL_PAGED_ATTENTION_K_SCALE, XHAL_PAGED_ATTENTION_V_SCALE);
    xhal::ops::paged_attention(
        view(q, op, XHAL_PAGED_ATTENTION_Q), view(k_cache, op, XHAL_PAGED_ATTENTION_K_CACHE),
        view(v_cache, op, XHAL_PAGED_ATTENTION_V_CACHE), view(block_table, op, XHAL_PAGED_ATTENTION_BLOCK_TABLE),
        view(seq_lens, op, XHAL_PAGED_ATTENTION_SEQ_LENS), o, attention_params(params), scales.get(), ptr(s));
  });
}

xhal_status xhal_paged_prefill_scaled(const DLTensor* q, const DLTensor* k_cache, const DLTensor* v_cache,
                                      const DLTensor* cu_seqlens_q, const DLTensor* block_table,
                                      const DLTensor* seq_lens, int64_t max_seqlen_q, const DLTensor* out,
                                      const xhal_attention_params* params, const DLTensor* lse, const DLTensor* k_scale,
                                      const DLTensor* v_scale, void* stream) {
  return guarded([&] {
    constexpr xhal::Op op = xhal::Op::paged_prefill;
    auto o = view(out, op, XHAL_PAGED_PREFILL_OUT);
    auto s = stream_for(o, stream);
    auto lse_view = optional_view(lse, op, XHAL_PAGED_PREFILL_LSE);
    const CacheScales scales(k_scale, v_scale, op, XHAL_PAGED_PREFILL_K_SCALE, XHAL_PAGED_PREFILL_V_SCALE);
    xhal::ops::paged_prefill(
        view(q, op, XHAL_PAGED_PREFILL_Q), view(k_cache, op, XHAL_PAGED_PREFILL_K_CACHE),
        view(v_cache, op, XHAL_PAGED_PREFILL_V_CACHE), view(cu_seqlens_q, op, XHAL_PAGED_PREFILL_CU_SEQLENS_Q),
        view(block_table, op, XHAL_PAGED_PREFILL_BLOCK_TABLE), view(seq_lens, op, XHAL_PAGED_PREFILL_SEQ_LENS),
        max_seqlen_q, o, attention_params(params), ptr(lse_view), scales.get(), ptr(s));
  });
}

}  // extern "C"
