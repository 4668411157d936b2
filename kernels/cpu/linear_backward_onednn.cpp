// linear_backward in bf16 through oneDNN's matmul where it beats the BLAS path (the CPUs
// onednn_runs_bf16 names: AMX, or AVX512_BF16 on an AMD CPU): dx = dout · w and dw = doutᵀ · x
// from the bf16 operands as stored, with f32 sums, each rounded once; dbias the column sums of
// dout as the BLAS kernel computes them. Shapes with an empty dimension go to the BLAS kernel,
// which writes their zeros.
#include "column_sums.hpp"
#include "element.hpp"
#include "kernel_registration.hpp"
#include "kernels/blas_layout.hpp"
#include "onednn.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

const char* onednn_backward_supports(void*, const xhal_op_call* c) {
  if (!onednn_runs_bf16()) {
    return "neither AMX nor AMD's AVX512_BF16 (or XHAL_CPU_DISABLE names them): the BLAS path is faster";
  }
  const DLTensor *dout = c->tensors[XHAL_LINEAR_BACKWARD_DOUT], *x = c->tensors[XHAL_LINEAR_BACKWARD_X];
  if (dout->shape[0] == 0 || dout->shape[1] == 0 || x->shape[1] == 0) return "an empty dimension";
  for (int slot : {XHAL_LINEAR_BACKWARD_DX, XHAL_LINEAR_BACKWARD_DW}) {
    const DLTensor* g = c->tensors[slot];
    if (g != nullptr && !kernels::blas_rows_apart(g)) return "rows of a gradient overlap";
  }
  return nullptr;
}

template <class E>
struct LinearBackwardOnednn {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* dout = c->tensors[XHAL_LINEAR_BACKWARD_DOUT];
    const DLTensor *x = c->tensors[XHAL_LINEAR_BACKWARD_X], *w = c->tensors[XHAL_LINEAR_BACKWARD_W];
    const DLTensor *dx = c->tensors[XHAL_LINEAR_BACKWARD_DX], *dw = c->tensors[XHAL_LINEAR_BACKWARD_DW];
    const DLTensor* dbias = c->tensors[XHAL_LINEAR_BACKWARD_DBIAS];
    if (dx != nullptr) {  // dx [M, K] = dout [M, N] · w [N, K]
      if (const xhal_status s =
              onednn_bf16_matmul(c, "linear_backward", {dout, false}, {w, false}, nullptr, dx, msg, len);
          s != XHAL_OK) {
        return s;
      }
    }
    if (dw != nullptr) {  // dw [N, K] = doutᵀ [N, M] · x [M, K]
      if (const xhal_status s =
              onednn_bf16_matmul(c, "linear_backward", {dout, true}, {x, false}, nullptr, dw, msg, len);
          s != XHAL_OK) {
        return s;
      }
    }
    if (dbias != nullptr) {
      const TensorRef<typename E::Storage> db(dbias);
      column_sums<E>(TensorRef<const typename E::Storage>(dout), db.data, db.stride(0));
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  kernels::register_for<LinearBackwardOnednn, BF16>(host, "cpu.linear_backward_onednn", XHAL_OP_LINEAR_BACKWARD,
                                                    accuracy_for,
                                                    {kFeatureFastPriority, false, onednn_backward_supports});
}

}  // namespace xhal::cpu
