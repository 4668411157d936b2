// sample on any GPU: a block a row, each warp a contiguous span of the row, eight chunks a lane in
// flight. Passes over the row (from L2 after the first): its largest logit and whether it holds a
// NaN or +inf (such rows, greedy ones and rows of -inf take argmax's pick); top-k's threshold by a
// radix select on the keys (8-bit digits, the highest first; bf16 and f16 rows stop where their keys
// end), counting tokens; top-p's by the same select weighing them (the first digit's histogram also
// gives the total the target is taken of); then each warp's kept weights, the drawn point placed
// in a warp, and that warp's walk through its span. The arithmetic is kernels/sampling.hpp's, the
// CPU kernels' own, and the sums are integers: the same token as the CPU.
#include "argmax_pick.cuh"
#include "kernels/sampling.hpp"
#include "launch.cuh"
#include "radix_select.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = kSelectThreads, kWarps = kSelectWarps;

struct Shared {
  RadixShared radix;
  unsigned long long warp_sums[kWarps];
  float warp_max[kWarps];
  Pick picks[kWarps];
  int drawing_warp;
  unsigned long long point_in_warp;
};

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const typename E::T* logits, RowLayout ll, void* tokens, bool wide, kernels::SampleArgs args) {
  __shared__ Shared sh;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const Span span = warp_span(ll.cols / VEC);
  for (int64_t r = blockIdx.x; r < ll.rows; r += gridDim.x) {
    const typename E::T* row = logits + ll.offset(r);
    const kernels::SampleRow s = args.row(r, ll.cols);
    auto write = [&](int64_t token) {
      if (wide) {
        static_cast<int64_t*>(tokens)[r] = token;
      } else {
        static_cast<int32_t*>(tokens)[r] = int32_t(token);
      }
    };
    float max = -INFINITY;
    bool special = false;
    each_in_span<E, VEC>(row, span, [&](float v, int64_t) {
      special = special || v != v || v == INFINITY;
      max = fmaxf(max, v);
    });
    max = warp_max(max);
    if (lane == 0) sh.warp_max[warp] = max;
    special = __syncthreads_or(special);
    for (int w = 0; w < kWarps; ++w) max = fmaxf(max, sh.warp_max[w]);
    if (s.greedy || special || max == -INFINITY) {
      Pick best{-INFINITY, INT64_MAX};
      each_in_span<E, VEC>(row, span, [&](float v, int64_t i) { take_if_before(best, {v, i}); });
      best = warp_pick(best);
      if (lane == 0) sh.picks[warp] = best;
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int w = 1; w < kWarps; ++w) take_if_before(best, sh.picks[w]);
        write(best.index);
      }
      __syncthreads();  // sh.picks and sh.warp_max are written again for the next row
      continue;
    }
    const float temperature = s.temperature;
    uint32_t threshold = 0;
    if (s.top_k > 0) {
      const unsigned long long k = (unsigned long long)s.top_k;
      threshold = select_key<E, VEC>(
                      row, span, [k](unsigned long long) { return k; }, 0,
                      [](float v) { return kernels::order_key(v); }, [](float) { return 1ull; }, sh.radix)
                      .key;
    }
    if (s.top_p < 1.0f) {
      const float top_p = s.top_p;
      threshold =
          select_key<E, VEC>(
              row, span, [top_p](unsigned long long total) { return kernels::top_p_target(top_p, total); }, threshold,
              [](float v) { return kernels::order_key(v); },
              [&](float v) { return (unsigned long long)kernels::sample_weight(v, max, temperature); }, sh.radix)
              .key;
    }
    // The kept weights of each warp's span, the point drawn among them, and the warp holding it.
    unsigned long long kept = 0;
    auto weight_kept = [&](float v) -> unsigned long long {
      if (kernels::order_key(v) < threshold) return 0;
      const uint64_t w = kernels::sample_weight(v, max, temperature);
      return w >= s.min_weight ? w : 0;
    };
    each_in_span<E, VEC>(row, span, [&](float v, int64_t) { kept += weight_kept(v); });
    kept = warp_inclusive_sum(kept);
    if (lane == kWarpSize - 1) sh.warp_sums[warp] = kept;
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long total = 0;
      for (int w = 0; w < kWarps; ++w) total += sh.warp_sums[w];
      unsigned long long point = kernels::sample_point(s, total), below = 0;
      int w = 0;
      while (below + sh.warp_sums[w] <= point) below += sh.warp_sums[w++];
      sh.drawing_warp = w;
      sh.point_in_warp = point - below;
    }
    __syncthreads();
    if (warp == sh.drawing_warp) {
      const unsigned long long point = sh.point_in_warp;
      unsigned long long below = 0;
      for (int64_t base = span.begin; base < span.end; base += kWarpSize) {
        const int64_t c = base + lane;
        Chunk<E, VEC> v;
        unsigned long long mine = 0;
        if (c < span.end) {
          v.load(row + c * VEC);
          for (int k = 0; k < VEC; ++k) mine += weight_kept(v.get(k));
        }
        const unsigned long long inclusive = warp_inclusive_sum(mine);
        const unsigned long long step = shfl_u64(inclusive, kWarpSize - 1);
        if (below + step > point) {
          unsigned long long at = below + inclusive - mine;
          if (at <= point && point < below + inclusive) {
            for (int k = 0; k < VEC; ++k) {
              at += weight_kept(v.get(k));
              if (at > point) {
                write(c * VEC + k);
                break;
              }
            }
          }
          break;
        }
        below += step;
      }
    }
    __syncthreads();  // the shared state is written again for the next row
  }
}

template <class E>
struct Sample {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* logits = c->tensors[XHAL_SAMPLE_LOGITS];
    const DLTensor* tokens = c->tensors[XHAL_SAMPLE_TOKENS];
    const RowLayout ll = row_layout(logits);
    if (ll.rows == 0) return XHAL_OK;
    const bool vectorized = rows_vectorizable(logits, ll.cols);
    const unsigned grid = grid_for(ll.rows, 1, int64_t(1) << 20);
    auto go = [&](auto kernel) {
      kernel<<<grid, kThreads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          static_cast<const T*>(logits->data), ll, tokens->data, tokens->dtype.bits == 64, kernels::sample_args(c));
    };
    if (vectorized) {
      go(sample_kernel<E, Vec<E>::kVec>);
    } else {
      go(sample_kernel<E, 1>);
    }
    return launch_status(msg, len, "sample");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<Sample>(host, XHAL_GPU_BACKEND ".sample", XHAL_OP_SAMPLE); }

}  // namespace xhal::gpu
