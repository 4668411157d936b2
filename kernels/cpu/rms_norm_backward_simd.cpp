// rms_norm_backward and fused_add_rms_norm_backward with SIMD (Highway, best target picked at run
// time). dweight is summed by RowBlockSums, as in the reference kernel: the same bits whatever the
// thread count. Rows go in pairs, each read twice, the second time from the cache: their two sums
// (x^2 and dout weight x), then dx and the pair's dweight terms, while the next pair is fetched into
// L2 (fetch_next_lines). bf16 is widened and narrowed two vectors at a time in load2_f32's order
// (even elements, odd ones: a shift or a mask a vector instead of a widening shuffle and a shift;
// the kernel is bound by its vector instructions on AVX-512 CPUs that split them in two), with the
// weight and the blocks' dweight terms kept in that order (to_pair_order, from_pair_order). Every
// stored value is computed from the op's bf16 inputs and eps, so bf16 is rounded without a NaN
// test (NaNs::from_bf16). Registered above the reference kernels.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rms_norm_backward_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/row_block_sums.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// Rows in pairs share each pass over the weight and the block's dweight row: the weight is loaded
// once per pair, and the pair's dweight terms are added in registers before one load and store of
// the partial row. (Four rows at once ran slower: eight rows' lines 16 KiB apart compete for the
// same L1 sets.)
constexpr int kGroup = 2;

// The residual's gradient: none (rms_norm_backward), dx itself, or a tensor of its own. A template
// argument, so that the loops carry no test of it (-O2 does not unswitch them).
enum class Residual { none, in_place, separate };

// The rows of one group: pointers to each row's start (dres null without a residual gradient).
template <class S>
struct RowGroup {
  const S* x[kGroup];
  const S* dout[kGroup];
  S* dx[kGroup];
  S* dres[kGroup];
};

// Prefetches into L2 the cache line of each of the next group's rows (x, dout and, with a residual,
// its gradient) at column `column`. The first half of the next rows goes out during a group's sums,
// the second during its dx: the memory stays busy through both passes (with all of it during dx,
// it sat idle during the sums: 12-17% slower). L2, not L1: a pair's rows are 64 KiB at 8192 columns,
// and in L1 they would evict the rows dx is being computed from.
template <class S>
void fetch_next_lines(const RowGroup<S>& next, int64_t column) {
  for (int r = 0; r < kGroup; ++r) {
    __builtin_prefetch(next.x[r] + column, 0, 2);
    __builtin_prefetch(next.dout[r] + column, 0, 2);
    if (next.dres[r] != nullptr) __builtin_prefetch(next.dres[r] + column, 0, 2);
  }
}

// R rows (R <= kGroup): dx (and the residual's gradient) written, their dweight terms added to
// `partial`, while the next group's rows are fetched (next: null for the last group). dx == dres
// (in place) is written once. kStream: streaming stores for dx.
template <class E, bool kStream, int R, Residual kRes>
void backward_group(const RowGroup<typename E::Storage>& g, const float* weight, int64_t n, float eps, float* partial,
                    const RowGroup<typename E::Storage>* next) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  VF sumsq[R], dot[R];
  for (int r = 0; r < R; ++r) sumsq[r] = hn::Zero(df), dot[r] = hn::Zero(df);
  constexpr int64_t kLine = 64 / int64_t(sizeof(typename E::Storage));
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    if (next != nullptr && i % (2 * kLine) == 0) fetch_next_lines(*next, i / 2);  // columns [0, n / 2)
    const VF w0 = hn::LoadU(df, weight + i), w1 = hn::LoadU(df, weight + i + lanes);  // in pair order
    for (int r = 0; r < R; ++r) {
      VF x0, x1, d0, d1;
      load2_f32<E>(g.x[r] + i, x0, x1), load2_f32<E>(g.dout[r] + i, d0, d1);
      sumsq[r] = hn::MulAdd(x1, x1, hn::MulAdd(x0, x0, sumsq[r]));
      dot[r] = hn::MulAdd(hn::Mul(d1, w1), x1, hn::MulAdd(hn::Mul(d0, w0), x0, dot[r]));
    }
  }
  for (; i + lanes <= n; i += lanes) {
    const VF w = hn::LoadU(df, weight + i);
    for (int r = 0; r < R; ++r) {
      const VF xv = load_f32<E>(g.x[r] + i);
      sumsq[r] = hn::MulAdd(xv, xv, sumsq[r]);
      dot[r] = hn::MulAdd(hn::Mul(load_f32<E>(g.dout[r] + i), w), xv, dot[r]);
    }
  }
  // dx = inv_rms (dout w - x c) with c = inv_rms^2 dot / n, computed as (dout inv_rms) w - x coeff
  // with coeff = inv_rms c: dout inv_rms also gives the dweight term (times x), so a vector of a
  // row costs four operations instead of five.
  float inv_rms[R], coeff[R];
  for (int r = 0; r < R; ++r) {
    float ss = hn::GetLane(hn::SumOfLanes(df, sumsq[r])), dt = hn::GetLane(hn::SumOfLanes(df, dot[r]));
    for (int64_t k = i; k < n; ++k) {
      const float xv = E::load(g.x[r][k]);
      ss += xv * xv;
      dt += E::load(g.dout[r][k]) * weight[k] * xv;
    }
    inv_rms[r] = 1.0f / std::sqrt(ss / float(n) + eps);
    coeff[r] = inv_rms[r] * inv_rms[r] * inv_rms[r] * dt / float(n);
  }
  VF rv[R], cv[R];
  for (int r = 0; r < R; ++r) rv[r] = hn::Set(df, inv_rms[r]), cv[r] = hn::Set(df, coeff[r]);
  constexpr bool has_res = kRes != Residual::none, separate = kRes == Residual::separate;
  // dx of row r at two vectors from column k (in pair order, the weight, terms and partial too),
  // or at one (kPair false, in column order); with two, a whole cache line of 16-bit elements on
  // AVX-512, read before any of it is written and written at once (a streamed line leaves its
  // write-combining buffer whole; a half line read back after a streamed half would wait for it).
  const auto step = [&](int64_t k, auto pair) {
    constexpr bool kPair = decltype(pair)::value;
    constexpr int kVectors = kPair ? 2 : 1;
    VF w[kVectors], terms[kVectors];
    for (int u = 0; u < kVectors; ++u) w[u] = hn::LoadU(df, weight + k + u * lanes), terms[u] = hn::Zero(df);
    for (int r = 0; r < R; ++r) {
      VF xv[kVectors], dv[kVectors], res[kVectors], d[kVectors];
      if constexpr (kPair) {
        load2_f32<E>(g.x[r] + k, xv[0], xv[1]), load2_f32<E>(g.dout[r] + k, dv[0], dv[1]);
        if constexpr (has_res) load2_f32<E>(g.dres[r] + k, res[0], res[1]);
      } else {
        xv[0] = load_f32<E>(g.x[r] + k), dv[0] = load_f32<E>(g.dout[r] + k);
        if constexpr (has_res) res[0] = load_f32<E>(g.dres[r] + k);
      }
      for (int u = 0; u < kVectors; ++u) {
        const VF scaled = hn::Mul(dv[u], rv[r]);
        terms[u] = hn::MulAdd(scaled, xv[u], terms[u]);
        d[u] = hn::NegMulAdd(xv[u], cv[r], hn::Mul(scaled, w[u]));
        if constexpr (has_res) d[u] = hn::Add(d[u], res[u]);
      }
      if constexpr (kPair) {
        if constexpr (separate) store2_f32<E, false, NaNs::from_bf16>(d[0], d[1], g.dres[r] + k);
        store2_f32<E, kStream, NaNs::from_bf16>(d[0], d[1], g.dx[r] + k);
      } else {
        if constexpr (separate) store_f32<E, false, NaNs::from_bf16>(d[0], g.dres[r] + k);
        store_f32<E, kStream, NaNs::from_bf16>(d[0], g.dx[r] + k);
      }
    }
    for (int u = 0; u < kVectors; ++u) {
      hn::StoreU(hn::Add(hn::LoadU(df, partial + k + u * lanes), terms[u]), df, partial + k + u * lanes);
    }
  };
  i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    if (next != nullptr && i % (2 * kLine) == 0) fetch_next_lines(*next, n / 2 + i / 2);  // [n / 2, n)
    step(i, std::true_type());
  }
  for (; i + lanes <= n; i += lanes) step(i, std::false_type());
  for (; i < n; ++i) {
    float terms = 0.0f;
    for (int r = 0; r < R; ++r) {
      const float xv = E::load(g.x[r][i]), dv = E::load(g.dout[r][i]);
      const float scaled = dv * inv_rms[r];
      terms += scaled * xv;
      float d = scaled * weight[i] - xv * coeff[r];
      if constexpr (has_res) {
        d += E::load(g.dres[r][i]);
        g.dres[r][i] = E::store(d);
      }
      g.dx[r][i] = E::store(d);
    }
    partial[i] += terms;
  }
}

// backward_group for R rows with the stream choice and the residual's kind (streaming only without a
// residual gradient).
template <class E, int R>
auto group_function(bool stream, Residual res) {
  switch (res) {
    case Residual::none:
      return stream ? backward_group<E, true, R, Residual::none> : backward_group<E, false, R, Residual::none>;
    case Residual::in_place: return backward_group<E, false, R, Residual::in_place>;
    default: return backward_group<E, false, R, Residual::separate>;
  }
}

// False when the allocator had no scratch to give.
template <class E>
bool backward_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> dout(c->tensors[XHAL_RMS_NORM_BACKWARD_DOUT]), x(c->tensors[XHAL_RMS_NORM_BACKWARD_X]);
  const TensorRef<const S> w(c->tensors[XHAL_RMS_NORM_BACKWARD_WEIGHT]);
  const TensorRef<S> dx(c->tensors[XHAL_RMS_NORM_BACKWARD_DX]), dweight(c->tensors[XHAL_RMS_NORM_BACKWARD_DWEIGHT]);
  const TensorRef<S> dresidual(kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DRESIDUAL));
  const int64_t n = dout.size(-1), rows = n == 0 ? 0 : dout.numel() / n;
  if (n == 0) return true;
  const float eps = kernels::op_params<xhal_norm_op_params>(c).eps;
  const RowBlockSums sums(c, rows, n);
  if (!sums.ok()) return false;
  std::vector<float> weight(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) weight[size_t(i)] = E::load(w.data[i]);
  to_pair_order<E>(weight.data(), weight.data(), n);
  const Residual res = !dresidual                  ? Residual::none
                       : dresidual.data == dx.data ? Residual::in_place
                                                   : Residual::separate;
  // Streaming stores for dx when it is large and there is no residual gradient. In place, dx's lines
  // were just read and sit in the cache: plain stores there ran 0.68-0.70 -> 0.76-0.77 of copy
  // (fused form, 16384 x 8192 bf16, two threads).
  const bool stream = should_stream<E>(c->tensors[XHAL_RMS_NORM_BACKWARD_DX]) && res == Residual::none;
  const auto group_fn = group_function<E, kGroup>(stream, res);
  const auto row_fn = group_function<E, 1>(stream, res);
  // The group of rows from `row` on (rows past `end` repeat the last one, never touched).
  auto group_at = [&](int64_t row, int64_t end) {
    RowGroup<S> g;
    for (int r = 0; r < kGroup; ++r) {
      const int64_t at = std::min(row + r, end - 1);
      g.x[r] = x.row(at), g.dout[r] = dout.row(at), g.dx[r] = dx.row(at);
      g.dres[r] = dresidual ? dresidual.row(at) : nullptr;
    }
    return g;
  };
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t b = 0; b < sums.blocks(); ++b) {
      float* partial = sums.start(b);
      const int64_t end = sums.end_row(b);
      int64_t row = sums.first_row(b);
      for (; row + kGroup <= end; row += kGroup) {
        const RowGroup<S> group = group_at(row, end), next = group_at(row + kGroup, end);
        group_fn(group, weight.data(), n, eps, partial, row + kGroup < end ? &next : nullptr);
      }
      for (; row < end; ++row) row_fn(group_at(row, end), weight.data(), n, eps, partial, nullptr);
      from_pair_order<E>(partial, n);  // the block's dweight terms back in column order for the sum
    }
    stream_fence();
    sums.add_into<E>(dweight.data, dweight.stride(0));
  }
  return true;
}

bool backward_rows(const xhal_op_call* c) {
  bool ok = false;
  with_element(c->dtype, [&]<class E>() { ok = backward_rows_typed<E>(c); });
  return ok;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(backward_rows);

namespace {
template <class E>
struct RmsNormBackwardSimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    if (HWY_DYNAMIC_DISPATCH(backward_rows)(c)) return XHAL_OK;
    return workspaces_refused(msg, len,
                              c->op == XHAL_OP_RMS_NORM_BACKWARD ? "rms_norm_backward" : "fused_add_rms_norm_backward");
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<RmsNormBackwardSimd>(host, "cpu.rms_norm_backward_simd", XHAL_OP_RMS_NORM_BACKWARD);
  register_fast_kernels<RmsNormBackwardSimd>(host, "cpu.fused_add_rms_norm_backward_simd",
                                             XHAL_OP_FUSED_ADD_RMS_NORM_BACKWARD);
}

}  // namespace xhal::cpu
#endif
