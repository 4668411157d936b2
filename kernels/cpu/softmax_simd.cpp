// softmax with SIMD (Highway, best target picked at run time): row_lse-inl.h's row functions (the
// lse in two passes, then 2^f polynomials for the exponentials; rows holding non-finite values
// take the scalar functions). Registered above the reference kernel of softmax.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/softmax_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/row_lse-inl.h"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/softmax_rows.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

xhal_status softmax_simd(const xhal_op_call* c) {
  xhal_status s = XHAL_OK;
  with_element(c->dtype, [&]<class E>() { s = softmax_rows<E>(c, simd_row_lse<E>, simd_exp_row<E>); });
  return s;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(softmax_simd);

namespace {
template <class E>
struct SoftmaxSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) { return HWY_DYNAMIC_DISPATCH(softmax_simd)(c); }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) { register_fast_kernels<SoftmaxSimd>(host, "cpu.softmax_simd", XHAL_OP_SOFTMAX); }

}  // namespace xhal::cpu
#endif
