// rms_norm_backward and fused_add_rms_norm_backward on the CPU. With r = 1/sqrt(mean(x^2) + eps)
// and g = dout * weight, a row's gradient is dx = r * (g - x * r^2 * mean(g * x)), and
// dweight = sum over rows of dout * x * r, summed by RowBlockSums: the same bits whatever the
// thread count, so the kernel is deterministic by construction.
#include <algorithm>
#include <cmath>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "row_block_sums.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct RmsNormBackwardKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const S> dout(c->tensors[XHAL_RMS_NORM_BACKWARD_DOUT]), x(c->tensors[XHAL_RMS_NORM_BACKWARD_X]);
    const TensorRef<const S> w(c->tensors[XHAL_RMS_NORM_BACKWARD_WEIGHT]);
    const TensorRef<S> dx(c->tensors[XHAL_RMS_NORM_BACKWARD_DX]), dweight(c->tensors[XHAL_RMS_NORM_BACKWARD_DWEIGHT]);
    const TensorRef<S> dresidual(kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DRESIDUAL));  // fused op
    const int64_t n = dout.size(-1), rows = n == 0 ? 0 : dout.numel() / n;
    if (n == 0) return XHAL_OK;  // no row has an element; dweight is empty
    const float eps = kernels::op_params<xhal_norm_op_params>(c).eps;
    const RowBlockSums sums(c, rows, n);
    // Each thread: the row of x and of g in f32.
    const ThreadWorkspaces workspaces(c, checked_bytes(2 * n, sizeof(float)), sums.blocks());
    if (!sums.ok() || !workspaces.ok()) {
      return workspaces_refused(
          msg, len, c->op == XHAL_OP_RMS_NORM_BACKWARD ? "rms_norm_backward" : "fused_add_rms_norm_backward");
    }
    std::vector<float> weight(static_cast<size_t>(n));
    load_row<E>(w.data, weight.data(), n);
#pragma omp parallel num_threads(workspaces.threads())
    {
      float* xf = static_cast<float*>(workspaces.of_this_thread());
      float* g = xf + n;
#pragma omp for schedule(static)
      for (int64_t b = 0; b < sums.blocks(); ++b) {
        float* partial = sums.start(b);
        for (int64_t r = sums.first_row(b); r < sums.end_row(b); ++r) {
          load_row<E>(x.row(r), xf, n);
          load_row<E>(dout.row(r), g, n);
          float sumsq = 0.0f, dot = 0.0f;
#pragma omp simd reduction(+ : sumsq, dot)
          for (int64_t i = 0; i < n; ++i) {
            sumsq += xf[i] * xf[i];
            dot += g[i] * weight[i] * xf[i];
          }
          const float inv_rms = 1.0f / std::sqrt(sumsq / float(n) + eps);
          const float coeff = inv_rms * inv_rms * dot / float(n);
          S* dxr = dx.row(r);
          S* dres = dresidual ? dresidual.row(r) : nullptr;
          for (int64_t i = 0; i < n; ++i) {
            partial[i] += g[i] * xf[i] * inv_rms;
            float d = inv_rms * (g[i] * weight[i] - xf[i] * coeff);
            if (dres != nullptr) {  // the gradient arriving on the residual stream joins it
              d += E::load(dres[i]);
              dres[i] = E::store(d);
            }
            dxr[i] = E::store(d);
          }
        }
      }
      sums.add_into<E>(dweight.data, dweight.stride(0));
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<RmsNormBackwardKernel>(host, "cpu.rms_norm_backward", XHAL_OP_RMS_NORM_BACKWARD);
  register_float_kernels<RmsNormBackwardKernel>(host, "cpu.fused_add_rms_norm_backward",
                                                XHAL_OP_FUSED_ADD_RMS_NORM_BACKWARD);
}

}  // namespace xhal::cpu
