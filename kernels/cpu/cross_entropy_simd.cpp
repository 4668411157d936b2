// cross_entropy and cross_entropy_backward with SIMD (Highway, best target picked at run time):
// the loops of cross_entropy_rows.hpp with row_lse-inl.h's row functions. Registered above the
// reference kernels of cross_entropy.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/cross_entropy_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>

#include "kernels/cpu/cross_entropy_rows.hpp"
#include "kernels/cpu/row_lse-inl.h"
#include "kernels/cpu/simd_element-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

template <class E>
xhal_status forward_typed(const xhal_op_call* c, char* msg, size_t len) {
  return cross_entropy_rows<E>(c, msg, len, simd_row_lse<E>);
}
template <class E>
xhal_status backward_typed(const xhal_op_call* c, char* msg, size_t len) {
  return cross_entropy_backward_rows<E>(c, msg, len, simd_exp_row<E>);
}

xhal_status forward(const xhal_op_call* c, char* msg, size_t len) {
  xhal_status s = XHAL_OK;
  with_element(c->dtype, [&]<class E>() { s = forward_typed<E>(c, msg, len); });
  return s;
}
xhal_status backward(const xhal_op_call* c, char* msg, size_t len) {
  xhal_status s = XHAL_OK;
  with_element(c->dtype, [&]<class E>() { s = backward_typed<E>(c, msg, len); });
  return s;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(forward);
HWY_EXPORT(backward);

namespace {
template <class E>
struct CrossEntropySimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return HWY_DYNAMIC_DISPATCH(forward)(c, msg, len);
  }
};
template <class E>
struct CrossEntropyBackwardSimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return HWY_DYNAMIC_DISPATCH(backward)(c, msg, len);
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<CrossEntropySimd>(host, "cpu.cross_entropy_simd", XHAL_OP_CROSS_ENTROPY);
  register_fast_kernels<CrossEntropyBackwardSimd>(host, "cpu.cross_entropy_backward_simd",
                                                  XHAL_OP_CROSS_ENTROPY_BACKWARD);
}

}  // namespace xhal::cpu
#endif
