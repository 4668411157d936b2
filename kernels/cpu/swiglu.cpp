// swiglu and swiglu_packed on the CPU: rows in parallel, one pass.
#include <cmath>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
void swiglu_row(const typename E::Storage* gate, const typename E::Storage* up, typename E::Storage* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = E::load(gate[i]);
    out[i] = E::store(g / (1.0f + std::exp(-g)) * E::load(up[i]));
  }
}

template <class E>
struct SwigluKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const TensorRef<const S> gate(c->tensors[XHAL_SWIGLU_GATE]), up(c->tensors[XHAL_SWIGLU_UP]);
    const TensorRef<S> out(c->tensors[XHAL_SWIGLU_OUT]);
    const int64_t n = out.size(-1), rows = out.rows();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) swiglu_row<E>(gate.row(r), up.row(r), out.row(r), n);
    return XHAL_OK;
  }
};

template <class E>
struct SwigluPackedKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const TensorRef<const S> x(c->tensors[XHAL_SWIGLU_GATE]);
    const TensorRef<S> out(c->tensors[XHAL_SWIGLU_OUT]);
    const int64_t n = out.size(-1), rows = out.rows();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) swiglu_row<E>(x.row(r), x.row(r) + n, out.row(r), n);
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<SwigluKernel>(host, "cpu.swiglu", XHAL_OP_SWIGLU);
  register_float_kernels<SwigluPackedKernel>(host, "cpu.swiglu_packed", XHAL_OP_SWIGLU_PACKED);
}

}  // namespace xhal::cpu
