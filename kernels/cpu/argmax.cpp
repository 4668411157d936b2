// argmax on the CPU: rows in parallel, each in two passes: its largest value as f32 in a loop the
// compiler vectorises (a NaN noted apart), then the first position holding it (or the first NaN),
// read again from the cache. A decode step's few rows take as many threads (a row is not split).
#include <cmath>
#include <cstdint>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "argmax_rows.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
int64_t argmax_row(const typename E::Storage* row, int64_t n) {
  float largest = -INFINITY;
  bool nan = false;
#pragma omp simd reduction(max : largest) reduction(|| : nan)
  for (int64_t i = 0; i < n; ++i) {
    const float v = E::load(row[i]);
    nan = nan || v != v;
    largest = v > largest ? v : largest;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float v = E::load(row[i]);
    if (nan ? v != v : v == largest) return i;
  }
  return 0;  // not reached: the first pass's largest value is in the row
}

template <class E>
struct ArgmaxKernel {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    argmax_rows<typename E::Storage>(c, argmax_row<E>);
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<ArgmaxKernel>(host, "cpu.argmax", XHAL_OP_ARGMAX); }

}  // namespace xhal::cpu
