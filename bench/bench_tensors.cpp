// The tensors xhal-bench's cases fill (bench_case.hpp).
#include <functional>
#include <numeric>
#include <random>

#include "bench/bench_case.hpp"

namespace xhal::bench {

Tensor random_tensor(const std::vector<int64_t>& shape, DType dtype, Device device) {
  static std::mt19937 rng(1234);
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  if (dtype == DType::f32) {
    std::vector<float> host(static_cast<size_t>(n));
    for (float& x : host) x = dist(rng);
    return Tensor::from_host(host.data(), shape, dtype, device);
  }
  std::vector<uint16_t> host(static_cast<size_t>(n));
  for (uint16_t& x : host) x = dtype == DType::bf16 ? xhal::float_to_bf16(dist(rng)) : xhal::float_to_f16(dist(rng));
  return Tensor::from_host(host.data(), shape, dtype, device);
}

Tensor hashed_tensor(int64_t n, DType dtype, Device device, float lo, float hi) {
  auto value = [&](int64_t i) {
    return lo + (hi - lo) * float((uint64_t(i) * 0x9E3779B97F4A7C15ull) >> 40) / float(1 << 24);
  };
  if (dtype == DType::f32) {
    std::vector<float> host(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) host[size_t(i)] = value(i);
    return Tensor::from_host(host.data(), {n}, dtype, device);
  }
  std::vector<uint16_t> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    host[size_t(i)] = dtype == DType::bf16 ? xhal::float_to_bf16(value(i)) : xhal::float_to_f16(value(i));
  }
  return Tensor::from_host(host.data(), {n}, dtype, device);
}

Tensor i32_tensor(const std::vector<int32_t>& values, const std::vector<int64_t>& shape, Device device) {
  return Tensor::from_host(values.data(), shape, DType::i32, device);
}

}  // namespace xhal::bench
