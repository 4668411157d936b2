// The row loop of the CPU sample kernels: rows in parallel, each row's largest logit (a row that is
// greedy, holds a NaN or +inf, or is all -inf takes argmax's pick), its keys and weights, top-k's
// and top-p's threshold from `threshold`, then the draw by a walk in index order (kernels/sampling.hpp
// has the arithmetic every backend shares). The kernels differ in how they find the threshold and
// compute the weights, and may run the row's passes (its largest value, the kept weight of a span)
// in vectors.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/argmax_rows.hpp"
#include "kernels/cpu/element.hpp"
#include "kernels/cpu/region_errors.hpp"
#include "kernels/cpu/scratch.hpp"
#include "kernels/cpu/tensor_ref.hpp"
#include "kernels/sampling.hpp"

namespace xhal::cpu {

// A row's keys (kernels::order_key) and weights (kernels::sample_weight, held as the float 2^40 w
// whose integer part is the weight), and room for the threshold search.
struct SampleRowWork {
  uint32_t* keys;
  float* weights;
  uint32_t* order;  // the reference's positions sorted by key
  uint64_t* spans;  // the draw's kept weight a span of kDrawSpan positions
};

inline uint64_t weight_at(const SampleRowWork& w, int64_t i) { return uint64_t(w.weights[i]); }

// Positions [begin, n)'s keys and weights one at a time, from the row as stored: the reference's
// whole row, the SIMD kernel's remainder.
template <class E>
void scalar_keys_and_weights(const typename E::Storage* row, int64_t begin, int64_t n, float max, float temperature,
                             SampleRowWork& w) {
  for (int64_t i = begin; i < n; ++i) {
    const float x = E::load(row[i]);
    w.keys[i] = kernels::order_key(x);
    w.weights[i] = kernels::sample_exp((x - max) / temperature) * 1099511627776.0f;  // 2^40
  }
}

// Whether a token stays: its key at least the threshold and its weight at least min-p's.
inline bool sample_kept(const SampleRowWork& w, int64_t i, uint32_t threshold, uint64_t min_weight) {
  return w.keys[i] >= threshold && weight_at(w, i) >= min_weight;
}

// The scalar row passes (the reference's; the SIMD kernel has vector ones of the same results):
// the row's largest value and whether it holds a NaN or +inf, and the kept weight of positions
// [begin, end) (an integer sum, exact in any order).
struct ScalarRowPasses {
  template <class E>
  static float row_max(const typename E::Storage* row, int64_t n, bool* special) {
    float max = -INFINITY;
    bool found = false;
    for (int64_t i = 0; i < n; ++i) {
      const float x = E::load(row[i]);
      found = found || x != x || x == INFINITY;
      max = x > max ? x : max;
    }
    *special = found;
    return max;
  }
  static uint64_t kept_weight(const SampleRowWork& w, int64_t begin, int64_t end, uint32_t threshold,
                              uint64_t min_weight) {
    uint64_t total = 0;
    for (int64_t i = begin; i < end; ++i) total += sample_kept(w, i, threshold, min_weight) ? weight_at(w, i) : 0;
    return total;
  }
};

// The drawn token among the kept ones (at least the largest logit, weight 2^40): the kept weight
// of each span of kDrawSpan positions, then the walk through the span that holds the point.
inline constexpr int64_t kDrawSpan = 1024;
template <class Passes>
int64_t sample_draw(const SampleRowWork& w, int64_t n, const kernels::SampleRow& s, uint32_t threshold) {
  const int64_t spans = (n + kDrawSpan - 1) / kDrawSpan;
  uint64_t* span_weight = w.spans;
  uint64_t total = 0;
  for (int64_t b = 0; b < spans; ++b) {
    span_weight[b] = Passes::kept_weight(w, b * kDrawSpan, std::min(n, (b + 1) * kDrawSpan), threshold, s.min_weight);
    total += span_weight[b];
  }
  const uint64_t point = kernels::sample_point(s, total);
  uint64_t below = 0;
  int64_t b = 0;
  for (; b + 1 < spans && below + span_weight[b] <= point; ++b) below += span_weight[b];
  for (int64_t i = b * kDrawSpan; i < n; ++i) {
    if (!sample_kept(w, i, threshold, s.min_weight)) continue;
    below += weight_at(w, i);
    if (below > point) return i;
  }
  return n - 1;  // not reached: the last kept token's sum is total > point
}

// Weights(const E::Storage* row, n, max, temperature, SampleRowWork&) fills keys and weights;
// Threshold(const SampleRowWork&, n, const SampleRow&) returns the key threshold (0: none);
// Passes: ScalarRowPasses or one with its members.
template <class E, class Passes, class Weights, class Threshold>
xhal_status sample_rows(const xhal_op_call* c, char* msg, size_t len, const char* kernel_name, Weights&& weights,
                        Threshold&& threshold) {
  using S = typename E::Storage;
  const TensorRef<const S> logits(c->tensors[XHAL_SAMPLE_LOGITS]);
  const DLTensor* tokens = c->tensors[XHAL_SAMPLE_TOKENS];
  const bool wide = tokens->dtype.bits == 64;
  const int64_t n = logits.size(-1), rows = logits.rows();
  const kernels::SampleArgs args = kernels::sample_args(c);
  Carver layout;
  layout.take<uint32_t>(n);
  layout.take<float>(n);
  layout.take<uint32_t>(n);
  layout.take<uint64_t>((n + kDrawSpan - 1) / kDrawSpan);
  ThreadWorkspaces spaces(c, layout.bytes(), rows);
  if (!spaces.ok()) return workspaces_refused(msg, len, kernel_name, layout.bytes());
  RegionErrors errors;
#pragma omp parallel for schedule(dynamic, 1) num_threads(spaces.threads())
  for (int64_t r = 0; r < rows; ++r) {
    errors.capture([&] {
      Carver carve(spaces.of_this_thread());
      SampleRowWork work{carve.take<uint32_t>(n), carve.take<float>(n), carve.take<uint32_t>(n),
                         carve.take<uint64_t>((n + kDrawSpan - 1) / kDrawSpan)};
      const S* row = logits.row(r);
      const kernels::SampleRow s = args.row(r, n);
      bool special = false;  // a NaN or +inf
      const float max = Passes::template row_max<E>(row, n, &special);
      int64_t token = 0;
      if (s.greedy || special || max == -INFINITY) {
        token = argmax_position<E>(row, n);
      } else {
        weights(row, n, max, s.temperature, work);
        token = sample_draw<Passes>(work, n, s, threshold(work, n, s));
      }
      if (wide) {
        static_cast<int64_t*>(tokens->data)[r] = token;
      } else {
        static_cast<int32_t*>(tokens->data)[r] = int32_t(token);
      }
    });
  }
  errors.rethrow();
  return XHAL_OK;
}

}  // namespace xhal::cpu
