// The C API's quantization functions (quantize, dequantize, the fp8 and int8 linears), as the rest
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

}  // extern "C"
