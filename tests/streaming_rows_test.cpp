// The CPU kernels' streaming-store row writes (stream_copy_row, stream_zero) at every alignment of
// the destination and lengths around their 16-byte middle: the same bytes as memcpy and memset,
// and nothing outside the row touched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "kernels/cpu/streaming_rows.hpp"

namespace xhal::cpu {
namespace {

TEST(StreamingRows, CopyAndZeroAtEveryAlignment) {
  std::vector<uint8_t> src(200);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7 + 3);
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t bytes : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(48), size_t(129)}) {
      SCOPED_TRACE(testing::Message() << "offset " << offset << " bytes " << bytes);
      alignas(16) uint8_t dst[256];
      std::fill(std::begin(dst), std::end(dst), uint8_t(0xAB));
      stream_copy_row(dst + offset, src.data() + 5, bytes);
      streaming_fence();
      for (size_t i = 0; i < sizeof dst; ++i) {
        const bool inside = i >= offset && i < offset + bytes;
        ASSERT_EQ(dst[i], inside ? src[5 + i - offset] : uint8_t(0xAB)) << "byte " << i;
      }
      stream_zero(dst + offset, bytes);
      streaming_fence();
      for (size_t i = 0; i < sizeof dst; ++i) {
        const bool inside = i >= offset && i < offset + bytes;
        ASSERT_EQ(dst[i], inside ? uint8_t(0) : uint8_t(0xAB)) << "byte " << i;
      }
    }
  }
}

}  // namespace
}  // namespace xhal::cpu
