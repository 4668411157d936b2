#include "ops/memory_overlap.hpp"

#include <algorithm>
#include <cstdint>

namespace xhal::ops {
namespace {

// The bytes [lo, hi) of a view's elements, relative to its data pointer, over the dims from
// `first` on.
struct ByteSpan {
  int64_t lo = 0, hi = 0;
};

ByteSpan span_of(const TensorView& t, int first) {
  const int64_t element = int64_t(dtype_size(t.dtype()));
  ByteSpan s{0, element};
  for (int d = first; d < t.ndim(); ++d) {
    const int64_t reach = (t.size(d) - 1) * t.stride(d) * element;  // fits: ArgChecks::tensor
    (reach < 0 ? s.lo : s.hi) += reach;
  }
  return s;
}

// The window [lo, hi) of every period of P bytes in which t's bytes lie (relative to its data
// pointer): dims whose byte stride is a multiple of P move whole periods, the others must stay
// within one. False when they do not fit in P.
bool window_of(const TensorView& t, int64_t P, ByteSpan* w) {
  const int64_t element = int64_t(dtype_size(t.dtype()));
  ByteSpan s{0, element};
  for (int d = 0; d < t.ndim(); ++d) {
    const int64_t stride = t.stride(d) * element;
    if (t.size(d) <= 1 || stride % P == 0) continue;
    const int64_t reach = (t.size(d) - 1) * stride;
    (reach < 0 ? s.lo : s.hi) += reach;
  }
  *w = s;
  return s.hi - s.lo <= P;
}

}  // namespace

bool same_view(const TensorView& a, const TensorView& b) {
  return a.data() == b.data() && a.dtype() == b.dtype() && a.device() == b.device() &&
         std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()) &&
         std::equal(a.strides().begin(), a.strides().end(), b.strides().begin(), b.strides().end());
}

bool may_overlap(const TensorView& a, const TensorView& b) {
  if (a.numel() == 0 || b.numel() == 0 || !(a.device() == b.device())) return false;
  // In 128 bits: an address plus an extent that fits in 64 bits may not.
  const auto address = [](const TensorView& t) { return __int128(reinterpret_cast<uintptr_t>(t.data())); };
  const ByteSpan sa = span_of(a, 0), sb = span_of(b, 0);
  const __int128 a0 = address(a), b0 = address(b);
  if (a0 + sa.hi <= b0 + sb.lo || b0 + sb.hi <= a0 + sa.lo) return false;
  // Interleaved rows: for some period P (a dim's byte stride), every dim of both views either
  // advances by whole periods or stays within one window of the period, so the bytes of a lie at
  // offsets [wa.lo, wa.hi) of every P-byte period and those of b at offsets shifted by
  // (b0 - a0) mod P: q, k and v as [T, H, D] or [B, S, H, D] views of one packed qkv buffer.
  for (int d = 0; d < a.ndim(); ++d) {
    const int64_t P = a.stride(d) * int64_t(dtype_size(a.dtype()));
    ByteSpan wa, wb;
    if (a.size(d) <= 1 || P <= 0 || !window_of(a, P, &wa) || !window_of(b, P, &wb)) continue;
    const int64_t shift = int64_t((((b0 + wb.lo) - (a0 + wa.lo)) % P + P) % P);
    if (shift >= wa.hi - wa.lo && shift + (wb.hi - wb.lo) <= P) return false;
  }
  return true;
}

}  // namespace xhal::ops
