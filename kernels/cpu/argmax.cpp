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
struct ArgmaxKernel {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    argmax_rows<typename E::Storage>(c, argmax_position<E>);
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<ArgmaxKernel>(host, "cpu.argmax", XHAL_OP_ARGMAX); }

}  // namespace xhal::cpu
