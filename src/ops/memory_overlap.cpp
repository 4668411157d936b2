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
  // Interleaved rows: dim 0 of both advances by the same positive stride S (bytes) and each row's
  // bytes fit in S, so the bytes of a row of a lie at offsets [ia.lo, ia.hi) of every S-byte period
  // and those of b at the same offsets shifted by (b0 - a0) mod S.
  if (a.ndim() < 1 || b.ndim() < 1) return true;
  const int64_t S = a.stride(0) * int64_t(dtype_size(a.dtype()));
  if (S <= 0 || S != b.stride(0) * int64_t(dtype_size(b.dtype()))) return true;
  const ByteSpan ia = span_of(a, 1), ib = span_of(b, 1);
  if (ia.hi - ia.lo > S || ib.hi - ib.lo > S) return true;
  // Offsets within the period, a's row starting at 0.
  const int64_t shift = int64_t((((b0 + ib.lo) - (a0 + ia.lo)) % S + S) % S);
  const int64_t a_len = ia.hi - ia.lo, b_len = ib.hi - ib.lo;
  return !(shift >= a_len && shift + b_len <= S);
}

}  // namespace xhal::ops
