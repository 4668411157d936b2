// add and mul on the CPU: rows in parallel, one pass, the formulas of
// kernels/binary_elementwise.hpp; y is x's shape or one row read for every row.
#include "element.hpp"
#include "kernel_registration.hpp"
#include "kernels/binary_elementwise.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E, class F>
void binary_row(const typename E::Storage* x, const typename E::Storage* y, typename E::Storage* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = E::store(F::apply(E::load(x[i]), E::load(y[i])));
}

template <class E>
struct BinaryElementwiseKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const TensorRef<const S> x(c->tensors[XHAL_ADD_X]), y(c->tensors[XHAL_ADD_Y]);
    const TensorRef<S> out(c->tensors[XHAL_ADD_OUT]);
    const int64_t n = out.size(-1), rows = out.rows();
    const bool broadcast = y.rows() == 1;
    kernels::with_binary_op(c, [&](auto f) {
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        binary_row<E, decltype(f)>(x.row(r), broadcast ? y.row(0) : y.row(r), out.row(r), n);
      }
    });
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<BinaryElementwiseKernel>(host, "cpu.add", XHAL_OP_ADD);
  register_float_kernels<BinaryElementwiseKernel>(host, "cpu.mul", XHAL_OP_MUL);
}

}  // namespace xhal::cpu
