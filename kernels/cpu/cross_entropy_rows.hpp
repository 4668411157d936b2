// What the reference and SIMD kernels of cross_entropy share: the label check, the per-token loss
// from a row's lse, the backward's per-row coefficients, and the loops over tokens. A kernel
// supplies the two row functions that touch every logit: lse(x, V) and
// exp_row(x, d, V, lse, scale, floor), which writes d[j] = scale * exp(x[j] - lse) - floor (d may
// be x).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "row_lse.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

// invalid_argument naming the first label outside 0..V-1 that is not ignore_index, else XHAL_OK.
inline xhal_status check_labels(const xhal_op_call* c, const char* op, char* msg, size_t len) {
  const DLTensor* labels = c->tensors[XHAL_CROSS_ENTROPY_LABELS];
  const int64_t T = labels->shape[0], V = c->tensors[XHAL_CROSS_ENTROPY_LOGITS]->shape[1];
  const int64_t ignore = kernels::op_params<xhal_cross_entropy_op_params>(c).ignore_index;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t y = index_at(labels, t);
    if (y != ignore && (y < 0 || y >= V)) {
      return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                          "xhal::ops::%s: argument 'labels': expected 0..%lld (classes of logits) or the "
                          "ignore_index %lld, got labels[%lld] = %lld",
                          op, (long long)(V - 1), (long long)ignore, (long long)t, (long long)y);
    }
  }
  return XHAL_OK;
}

template <class E, class Lse>
xhal_status cross_entropy_rows(const xhal_op_call* c, char* msg, size_t len, Lse row_lse) {
  using S = typename E::Storage;
  if (const xhal_status s = check_labels(c, "cross_entropy", msg, len); s != XHAL_OK) return s;
  const auto& p = kernels::op_params<xhal_cross_entropy_op_params>(c);
  const TensorRef<const S> logits(c->tensors[XHAL_CROSS_ENTROPY_LOGITS]);
  const TensorRef<float> loss(c->tensors[XHAL_CROSS_ENTROPY_LOSS]), lse(c->tensors[XHAL_CROSS_ENTROPY_LSE]);
  const DLTensor* labels = c->tensors[XHAL_CROSS_ENTROPY_LABELS];
  const int64_t T = logits.size(0), V = logits.size(1);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    const S* x = logits.at(t, 0);
    const float l = row_lse(x, V);
    *lse.at(t) = l;
    const int64_t y = index_at(labels, t);
    if (y == p.ignore_index) {
      *loss.at(t) = 0.0f;
      continue;
    }
    // Terms that are off are left out, not multiplied by 0 (0 * inf is NaN for masked classes).
    float value = l - E::load(x[y]);
    if (p.label_smoothing > 0) {
      float sum = 0.0f;
      for (int64_t j = 0; j < V; ++j) sum += E::load(x[j]);
      value = (1.0f - p.label_smoothing) * value + p.label_smoothing * (l - sum / float(V));
    }
    *loss.at(t) = p.z_loss > 0 ? value + p.z_loss * l * l : value;
  }
  return XHAL_OK;
}

// dlogits = dloss * ((1 + 2 z lse) softmax - (1 - s) onehot(label) - s / V); the label's logit is
// read before the row is written, so dlogits may be logits.
template <class E, class ExpRow>
xhal_status cross_entropy_backward_rows(const xhal_op_call* c, char* msg, size_t len, ExpRow exp_row) {
  using S = typename E::Storage;
  if (const xhal_status s = check_labels(c, "cross_entropy_backward", msg, len); s != XHAL_OK) return s;
  const auto& p = kernels::op_params<xhal_cross_entropy_op_params>(c);
  const TensorRef<const S> logits(c->tensors[XHAL_CROSS_ENTROPY_BACKWARD_LOGITS]);
  const TensorRef<S> dlogits(c->tensors[XHAL_CROSS_ENTROPY_BACKWARD_DLOGITS]);
  const TensorRef<const float> lse(c->tensors[XHAL_CROSS_ENTROPY_BACKWARD_LSE]);
  const TensorRef<const float> dloss(c->tensors[XHAL_CROSS_ENTROPY_BACKWARD_DLOSS]);
  const DLTensor* labels = c->tensors[XHAL_CROSS_ENTROPY_BACKWARD_LABELS];
  const int64_t T = logits.size(0), V = logits.size(1);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    const S* x = logits.at(t, 0);
    S* d = dlogits.at(t, 0);
    const int64_t y = index_at(labels, t);
    if (y == p.ignore_index) {
      for (int64_t j = 0; j < V; ++j) d[j] = E::store(0.0f);
      continue;
    }
    const float l = *lse.at(t), g = *dloss.at(t), xy = E::load(x[y]);
    const float scale = g * (1.0f + 2.0f * p.z_loss * l), floor = g * p.label_smoothing / float(V);
    exp_row(x, d, V, l, scale, floor);
    d[y] = E::store(scale * std::exp(xy - l) - floor - g * (1.0f - p.label_smoothing));
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu
