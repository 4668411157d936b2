// Large host copies: glibc's memcpy on this size keeps the destination's cache lines (read for
// ownership, then written back), while a copy of hundreds of MiB gains nothing from them; vector
// loads and streaming stores move each byte once each way.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/stream_copy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <omp.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/stream_copy.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

void stream_copy_bytes(uint8_t* dst, const uint8_t* src, size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d), step = 4 * lanes;
  // Streaming stores need aligned destinations: the head up to the first aligned byte by memcpy.
  const size_t head = std::min(bytes, (lanes - reinterpret_cast<uintptr_t>(dst) % lanes) % lanes);
  std::memcpy(dst, src, head);
  dst += head, src += head, bytes -= head;
  const int64_t blocks = int64_t(bytes / step);
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t i = size_t(b) * step;
      const auto v0 = hn::LoadU(d, src + i), v1 = hn::LoadU(d, src + i + lanes);
      const auto v2 = hn::LoadU(d, src + i + 2 * lanes), v3 = hn::LoadU(d, src + i + 3 * lanes);
      hn::Stream(v0, d, dst + i), hn::Stream(v1, d, dst + i + lanes);
      hn::Stream(v2, d, dst + i + 2 * lanes), hn::Stream(v3, d, dst + i + 3 * lanes);
    }
    stream_fence();
  }
  const size_t done = size_t(blocks) * step;
  std::memcpy(dst + done, src + done, bytes - done);
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(stream_copy_bytes);

void stream_copy(void* dst, const void* src, size_t bytes) {
  HWY_DYNAMIC_DISPATCH(stream_copy_bytes)(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes);
}

}  // namespace xhal::cpu
#endif
