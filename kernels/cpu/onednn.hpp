// oneDNN behind the CPU's bf16 linear on CPUs with AMX or AMD's AVX512_BF16
// (kernels/cpu/linear_onednn.cpp) and its int8 linear on CPUs with VNNI
// (kernels/cpu/linear_int8_onednn.cpp).
#pragma once

#include <string>

#include "xhal/plugin.h"

namespace xhal::cpu {

// "oneDNN 2.6.3 (bf16 linear on AVX512_BF16; int8 linear on VNNI)", or why there is none.
#if defined(XHAL_HAVE_ONEDNN)
std::string onednn_summary();
// Whether oneDNN's int8 matmul runs VNNI here (and XHAL_CPU_DISABLE leaves it): its sums are exact.
bool onednn_runs_vnni();
// Whether oneDNN's bf16 matmul beats the BLAS path here: AMX, or AVX512_BF16 on an AMD CPU.
bool onednn_runs_bf16();
// One operand of a bf16 matmul: a 2-d tensor with its strides, or its transpose.
struct MatmulOperand {
  const DLTensor* t;
  bool transposed;
};
// dst = src · weights (+ bias, one row of dst's columns) in bf16 with f32 sums, through oneDNN, its
// scratchpad from the core's allocator; errors name `op`.
xhal_status onednn_bf16_matmul(const xhal_op_call* c, const char* op, MatmulOperand src, MatmulOperand weights,
                               const DLTensor* bias, const DLTensor* dst, char* msg, size_t len);
#else
inline std::string onednn_summary() { return "oneDNN: none (built without it)"; }
#endif

}  // namespace xhal::cpu
