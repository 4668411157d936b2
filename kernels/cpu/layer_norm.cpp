// layer_norm on the CPU: rows in parallel, each row converted to f32 once, then its mean, its
// variance about the mean (a second pass over the f32 copy: no cancellation of E[x^2] - mean^2),
// and the output from that copy.
#include <cmath>
#include <vector>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
void layer_norm_row(const float* row, const float* weight, const float* bias, int64_t n, float eps,
                    typename E::Storage* out) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += row[i];
  const float mean = sum / float(n);
  float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
  for (int64_t i = 0; i < n; ++i) squares += (row[i] - mean) * (row[i] - mean);
  const float inv_std = 1.0f / std::sqrt(squares / float(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    const float y = (row[i] - mean) * inv_std * weight[i];
    out[i] = E::store(bias != nullptr ? y + bias[i] : y);
  }
}

template <class E>
struct LayerNormKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const S> x(c->tensors[XHAL_LAYER_NORM_X]), w(c->tensors[XHAL_LAYER_NORM_WEIGHT]);
    const TensorRef<const S> b(kernels::tensor_at(c, XHAL_LAYER_NORM_BIAS));
    const TensorRef<S> out(c->tensors[XHAL_LAYER_NORM_OUT]);
    const int64_t n = x.size(-1), rows = x.rows();
    std::vector<float> weight(static_cast<size_t>(n)), bias(b ? static_cast<size_t>(n) : 0);
    load_row<E>(w.data, weight.data(), n);
    if (b) load_row<E>(b.data, bias.data(), n);
    const float eps = kernels::op_params<xhal_norm_op_params>(c).eps;
    const ThreadWorkspaces workspaces(c, checked_bytes(n, sizeof(float)), rows);  // a row in f32 each
    if (!workspaces.ok()) return workspaces_refused(msg, len, "layer_norm", workspaces.bytes_each());
#pragma omp parallel num_threads(workspaces.threads())
    {
      float* row = static_cast<float*>(workspaces.of_this_thread());
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        load_row<E>(x.row(r), row, n);
        layer_norm_row<E>(row, weight.data(), b ? bias.data() : nullptr, n, eps, out.row(r));
      }
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<LayerNormKernel>(host, "cpu.layer_norm", XHAL_OP_LAYER_NORM); }

}  // namespace xhal::cpu
