// Front ends of the gated activations: swiglu and gelu_and_mul, each with separate gate and up
// tensors or both packed in one row. The two families share their tensor slots and their checks.
#include "core/text_format.hpp"

#include <type_traits>

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

static_assert(XHAL_GELU_AND_MUL_GATE == XHAL_SWIGLU_GATE && XHAL_GELU_AND_MUL_UP == XHAL_SWIGLU_UP &&
                  XHAL_GELU_AND_MUL_OUT == XHAL_SWIGLU_OUT && XHAL_GELU_AND_MUL_PACKED_X == XHAL_SWIGLU_PACKED_X &&
                  XHAL_GELU_AND_MUL_PACKED_OUT == XHAL_SWIGLU_PACKED_OUT,
              "the gated activations share their slots");
static_assert(int32_t(GeluApproximation::erf) == XHAL_GELU_ERF && int32_t(GeluApproximation::tanh) == XHAL_GELU_TANH);

// out = act(gate) * up, every tensor of one shape and dtype. params: the op's (Params void: none).
template <class Params>
void gated(Op op, const TensorView& gate, const TensorView& up, const TensorView& out, const Params* params,
           const Stream* stream) {
  const ArgChecks check(op);
  check.min_rank(XHAL_SWIGLU_GATE, gate, 1);
  check.float_dtype(XHAL_SWIGLU_GATE, gate);
  check.min_rank(XHAL_SWIGLU_UP, up, 1);
  check.dtype(XHAL_SWIGLU_UP, up, gate.dtype(), " (same as gate)");
  check.same_shape(XHAL_SWIGLU_UP, up, gate, XHAL_SWIGLU_GATE);
  check.min_rank(XHAL_SWIGLU_OUT, out, 1);
  check.dtype(XHAL_SWIGLU_OUT, out, gate.dtype(), " (same as gate)");
  check.same_shape(XHAL_SWIGLU_OUT, out, gate, XHAL_SWIGLU_GATE);
  check.same_device(XHAL_SWIGLU_GATE, gate, out.device(), XHAL_SWIGLU_OUT);
  check.same_device(XHAL_SWIGLU_UP, up, out.device(), XHAL_SWIGLU_OUT);
  check.apart_or_in_place(XHAL_SWIGLU_OUT, out, XHAL_SWIGLU_GATE, gate);
  check.apart_or_in_place(XHAL_SWIGLU_OUT, out, XHAL_SWIGLU_UP, up);
  OpCall call(op, gate.dtype(), out.device(), stream);
  if constexpr (!std::is_void_v<Params>) call.set_params(*params);
  call.set(XHAL_SWIGLU_GATE, gate);
  call.set(XHAL_SWIGLU_UP, up);
  call.set(XHAL_SWIGLU_OUT, out);
  call.run();
}

// x[...,2N] holds gate and up as the halves of each row; out[...,N].
template <class Params>
void gated_packed(Op op, const TensorView& x, const TensorView& out, const Params* params, const Stream* stream) {
  const ArgChecks check(op);
  check.min_rank(XHAL_SWIGLU_PACKED_X, x, 1);
  check.float_dtype(XHAL_SWIGLU_PACKED_X, x);
  if (x.size(-1) % 2 != 0) {
    check.fail(XHAL_SWIGLU_PACKED_X, "an even last dim (gate and up halves)", format_text("{}", x.size(-1)));
  }
  check.tensor(XHAL_SWIGLU_PACKED_OUT, out, x.ndim());
  check.dtype(XHAL_SWIGLU_PACKED_OUT, out, x.dtype(), " (same as x)");
  for (int d = 0; d + 1 < x.ndim(); ++d) check.dim(XHAL_SWIGLU_PACKED_OUT, out, d, x.size(d), "same as x");
  check.dim(XHAL_SWIGLU_PACKED_OUT, out, x.ndim() - 1, x.size(-1) / 2, "half the last dim of x");
  check.same_device(XHAL_SWIGLU_PACKED_X, x, out.device(), XHAL_SWIGLU_PACKED_OUT);
  check.apart(XHAL_SWIGLU_PACKED_OUT, out, {{XHAL_SWIGLU_PACKED_X, &x}});
  OpCall call(op, x.dtype(), out.device(), stream);
  if constexpr (!std::is_void_v<Params>) call.set_params(*params);
  call.set(XHAL_SWIGLU_PACKED_X, x);
  call.set(XHAL_SWIGLU_PACKED_OUT, out);
  call.run();
}

xhal_gelu_op_params gelu_params(Op op, GeluApproximation approximation) {
  if (approximation != GeluApproximation::erf && approximation != GeluApproximation::tanh) {
    ArgChecks(op).fail("approximation", "erf (0) or tanh (1)", format_text("{}", int32_t(approximation)));
  }
  return {sizeof(xhal_gelu_op_params), int32_t(approximation)};
}

}  // namespace

void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, const Stream* stream) {
  gated<void>(Op::swiglu, gate, up, out, nullptr, stream);
}

void swiglu_packed(const TensorView& x, const TensorView& out, const Stream* stream) {
  gated_packed<void>(Op::swiglu_packed, x, out, nullptr, stream);
}

void gelu_and_mul(const TensorView& gate, const TensorView& up, const TensorView& out, GeluApproximation approximation,
                  const Stream* stream) {
  const xhal_gelu_op_params params = gelu_params(Op::gelu_and_mul, approximation);
  gated(Op::gelu_and_mul, gate, up, out, &params, stream);
}

void gelu_and_mul_packed(const TensorView& x, const TensorView& out, GeluApproximation approximation,
                         const Stream* stream) {
  const xhal_gelu_op_params params = gelu_params(Op::gelu_and_mul_packed, approximation);
  gated_packed(Op::gelu_and_mul_packed, x, out, &params, stream);
}

}  // namespace xhal::ops
