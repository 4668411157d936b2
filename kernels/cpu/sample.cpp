// sample on the CPU, the reference: a row's positions sorted by logit, largest first, give top-k's
// threshold (the k-th key) and top-p's (the key at which the running weight reaches the target);
// weights one exponential at a time. Rows in parallel (sample_rows.hpp).
#include <algorithm>
#include <cstdint>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "sample_rows.hpp"

namespace xhal::cpu {
namespace {

template <class E>
void scalar_weights(const typename E::Storage* row, int64_t n, float max, float temperature, SampleRowWork& w) {
  scalar_keys_and_weights<E>(row, 0, n, max, temperature, w);
}

uint32_t sorted_threshold(const SampleRowWork& w, int64_t n, const kernels::SampleRow& s) {
  if (s.top_k == 0 && !(s.top_p < 1.0f)) return 0;
  for (int64_t i = 0; i < n; ++i) w.order[i] = uint32_t(i);
  std::sort(w.order, w.order + n, [&](uint32_t a, uint32_t b) { return w.keys[a] > w.keys[b]; });
  uint32_t threshold = s.top_k > 0 ? w.keys[w.order[s.top_k - 1]] : 0;
  if (s.top_p < 1.0f) {
    uint64_t total = 0;
    for (int64_t j = 0; j < n && w.keys[w.order[j]] >= threshold; ++j) total += weight_at(w, w.order[j]);
    const uint64_t target = kernels::top_p_target(s.top_p, total);
    uint64_t sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      sum += weight_at(w, w.order[j]);
      if (sum >= target) {
        threshold = w.keys[w.order[j]];
        break;
      }
    }
  }
  return threshold;
}

template <class E>
struct SampleReference {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return sample_rows<E, ScalarRowPasses>(c, msg, len, "cpu.sample", scalar_weights<E>, sorted_threshold);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<SampleReference>(host, "cpu.sample", XHAL_OP_SAMPLE); }

}  // namespace xhal::cpu
