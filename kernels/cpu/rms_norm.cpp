// rms_norm and fused_add_rms_norm on the CPU: rows in parallel, each row converted to f32 once,
// reduced and scaled from that copy (one read of x, one write of out).
#include <cmath>
#include <vector>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
void normalize_row(float* row, const float* weight, int64_t n, float eps, typename E::Storage* out) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += row[i] * row[i];
  const float inv_rms = 1.0f / std::sqrt(sum / float(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = E::store(row[i] * inv_rms * weight[i]);
}

template <class E>
struct RmsNormKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const S> x(c->tensors[XHAL_RMS_NORM_X]), w(c->tensors[XHAL_RMS_NORM_WEIGHT]);
    const TensorRef<S> out(c->tensors[XHAL_RMS_NORM_OUT]);
    const TensorRef<S> residual(kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL));  // fused_add_rms_norm only
    const int64_t n = x.size(-1), rows = x.rows();
    std::vector<float> weight(static_cast<size_t>(n));
    load_row<E>(w.data, weight.data(), n);
    const ThreadWorkspaces workspaces(c, checked_bytes(n, sizeof(float)), rows);  // a row in f32 each
    if (!workspaces.ok()) {
      return workspaces_refused(msg, len, "rms_norm", workspaces.bytes_each());
    }
#pragma omp parallel num_threads(workspaces.threads())
    {
      float* row = static_cast<float*>(workspaces.of_this_thread());
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        load_row<E>(x.row(r), row, n);
        if (residual) {
          // residual = x + residual, stored in its dtype; the norm uses the stored value, as the
          // next layer will.
          S* res = residual.row(r);
          for (int64_t i = 0; i < n; ++i) {
            res[i] = E::store(row[i] + E::load(res[i]));
            row[i] = E::load(res[i]);
          }
        }
        normalize_row<E>(row, weight.data(), n, kernels::op_params<xhal_norm_op_params>(c).eps, out.row(r));
      }
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<RmsNormKernel>(host, "cpu.rms_norm", XHAL_OP_RMS_NORM);
  register_float_kernels<RmsNormKernel>(host, "cpu.fused_add_rms_norm", XHAL_OP_FUSED_ADD_RMS_NORM);
}

}  // namespace xhal::cpu
