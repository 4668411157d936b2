// Rows written with streaming stores on x86 (the 16-byte aligned middle of each; plain stores for
// the ends and on other CPUs), for kernels whose destination is far larger than the caches: a
// streaming store skips reading the line before writing it (memset's and memcpy's stores read it
// first: twice the memory traffic). The writing thread calls streaming_fence() before others read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xhal::cpu {

// dst[0..bytes) = 0; dst may be null when bytes is 0 (an empty tensor's data).
inline void stream_zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memset(d, 0, head);
  d += head, bytes -= head;
  const __m128i zero = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 16 <= bytes; i += 16) _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), zero);
  std::memset(d + i, 0, bytes - i);
#else
  std::memset(dst, 0, bytes);
#endif
}

// dst[0..bytes) = src[0..bytes); the ranges do not overlap; null pointers when bytes is 0.
inline void stream_copy_row(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  size_t i = 0;
  for (; i + 16 <= bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Orders the calling thread's streaming stores before what follows.
inline void streaming_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace xhal::cpu
