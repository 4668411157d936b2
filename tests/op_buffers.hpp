// Host buffers the argument-validation tests build their views from (contents do not matter for
// validation; `out` holds a marker value so that a test can tell whether anything was written).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal {

struct Buffers {
  std::vector<float> f = std::vector<float>(1 << 16, 0.5f);
  std::vector<float> out = std::vector<float>(1 << 16, 7.0f);
  std::vector<uint16_t> h = std::vector<uint16_t>(1 << 16, 0);
  std::vector<int32_t> i = std::vector<int32_t>(1 << 10, 0);
  std::vector<int64_t> l = std::vector<int64_t>(1 << 10, 0);
  TensorView f32(std::vector<int64_t> shape) { return {f.data(), DType::f32, shape}; }
  TensorView o32(std::vector<int64_t> shape) { return {out.data(), DType::f32, shape}; }
  TensorView bf16(std::vector<int64_t> shape) { return {h.data(), DType::bf16, shape}; }
  TensorView i32(std::vector<int64_t> shape) { return {i.data(), DType::i32, shape}; }
  TensorView i64(std::vector<int64_t> shape) { return {l.data(), DType::i64, shape}; }
  bool out_untouched() const {
    return std::all_of(out.begin(), out.end(), [](float v) { return v == 7.0f; });
  }
};

}  // namespace xhal
