// paged_attention and paged_prefill over an f8_e4m3 KV cache on the CPU: the blocks each sequence
// reads (its first ceil(seq_len / block_size)) are dequantized, code value times its kv head's
// scale rounded once to q's dtype, into a compact cache with a table of its own, and the call runs
// on it through the core's choice of kernel for q's dtype (fp8_cache_call.hpp). The CPU reads every
// key it converts once more; a fused kernel would save that pass where decode is bound by memory.
#include <algorithm>
#include <array>
#include <tuple>
#include <vector>

#include "kernel_registration.hpp"
#include "kernels/fp8_cache_call.hpp"
#include "kernels/quantize.hpp"
#include "paged_attention_checks.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

// The dequantized values of every code of kv head h: code_value(c) * scale, in f32.
std::array<float, 256> code_values(float scale) {
  std::array<float, 256> values{};
  for (int c = 0; c < 256; ++c) {
    values[size_t(c)] = kernels::dequantize_value(uint8_t(c), scale, kernels::QuantFormat::e4m3);
  }
  return values;
}

// Compact block i holds source block sources[i]'s rows, every head converted with its scale.
template <class E>
void dequantize_blocks(const DLTensor* cache, const DLTensor* scale, const std::vector<int64_t>& sources, void* out) {
  using S = typename E::Storage;
  const TensorRef<const uint8_t> codes(cache);
  const int64_t block_size = codes.size(1), H = codes.size(2), D = codes.size(3);
  const float* scales = static_cast<const float*>(scale->data);
  std::vector<std::array<float, 256>> tables(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) tables[size_t(h)] = code_values(scales[kernels::scale_index(scale, h)]);
  S* dst = static_cast<S*>(out);
  const int64_t blocks = int64_t(sources.size());
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < blocks; ++i) {
    for (int64_t r = 0; r < block_size; ++r) {
      for (int64_t h = 0; h < H; ++h) {
        const uint8_t* from = codes.at(sources[size_t(i)], r, h, 0);
        S* to = dst + ((i * block_size + r) * H + h) * D;
        const float* values = tables[size_t(h)].data();
        for (int64_t d = 0; d < D; ++d) to[d] = E::store(values[from[d]]);
      }
    }
  }
}

template <class E>
xhal_status run_typed(const xhal_op_call* c, char* msg, size_t len) {
  using S = typename E::Storage;
  const int table_slot = kernels::block_table_slot(c), lens_slot = kernels::seq_lens_slot(c);
  if (const xhal_status s = check_paged_tables(c, msg, len, table_slot, lens_slot); s != XHAL_OK) return s;
  const DLTensor *kc = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE], *vc = c->tensors[XHAL_PAGED_ATTENTION_V_CACHE];
  const TensorRef<const int32_t> table(c->tensors[table_slot]), lens(c->tensors[lens_slot]);
  const int64_t B = table.size(0), max_blocks = table.size(1), block_size = kc->shape[1];
  // The compact cache: each sequence's blocks in order, the rest of its table row pointing at block 0
  // (never read: past its length).
  std::vector<int64_t> sources;
  std::vector<int32_t> compact_table(static_cast<size_t>(B * max_blocks), 0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t blk = 0; blk * block_size < *lens.at(b); ++blk) {
      compact_table[size_t(b * max_blocks + blk)] = int32_t(sources.size());
      sources.push_back(*table.at(b, blk));
    }
  }
  const int64_t blocks = std::max<int64_t>(int64_t(sources.size()), 1);
  const int64_t row = kc->shape[2] * kc->shape[3], v_row = vc->shape[2] * vc->shape[3];
  const int64_t slots = checked_bytes(blocks, block_size);  // blocks * block_size, -1 on overflow
  const auto carve = [&](Carver& carver) {
    return std::tuple{carver.take<S>(slots, row), carver.take<S>(slots, v_row),
                      carver.take<int32_t>(int64_t(compact_table.size()))};
  };
  Carver sizes;
  carve(sizes);
  const Scratch scratch(c, sizes.bytes());
  if (scratch.data() == nullptr) return workspaces_refused(msg, len, "paged attention over an fp8 cache");
  Carver carver(scratch.data());
  const auto [k, v, t] = carve(carver);
  std::copy(compact_table.begin(), compact_table.end(), t);
  dequantize_blocks<E>(kc, c->tensors[XHAL_PAGED_ATTENTION_K_SCALE], sources, k);
  dequantize_blocks<E>(vc, c->tensors[XHAL_PAGED_ATTENTION_V_SCALE], sources, v);
  const kernels::DequantizedCacheCall inner(c, blocks, k, v, t);
  return inner.dispatch(msg, len);
}

xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
  return kernels::with_float_element<F32, F16, BF16>(c->tensors[XHAL_PAGED_ATTENTION_Q],
                                                     [&](auto e) { return run_typed<decltype(e)>(c, msg, len); });
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  for (const xhal_op op : {XHAL_OP_PAGED_ATTENTION, XHAL_OP_PAGED_PREFILL}) {
    kernels::register_kernel(
        host, op == XHAL_OP_PAGED_ATTENTION ? "cpu.paged_attention_fp8_cache" : "cpu.paged_prefill_fp8_cache", op,
        XHAL_DTYPE_F8_E4M3, &kernels::guarded<&run>, accuracy_for(XHAL_DTYPE_BF16), {0, true, nullptr});
  }
}

}  // namespace xhal::cpu
